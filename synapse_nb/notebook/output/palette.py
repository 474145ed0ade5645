"""Text colours of our HTML that read on light and dark themes: one CSS reference per meaning, and the stylesheet
that points those references at JupyterLab's dark-theme variables.

A colour is written `var(--snb-error,#cf222e)`: on a light theme (and in any frontend without our stylesheet:
GitHub, nbviewer, an untrusted notebook) the fallback is the light colour, chosen for AA contrast on white and
on our light tints. On a dark theme (JupyterLab Dark sets `data-jp-theme-light="false"` on the body; VS Code sets
`vscode-dark`) `DARK_STYLE` defines `--snb-*` from JupyterLab's theme variables (`--jp-error-color2`,
`--jp-success-color2`, `--jp-brand-color2`, ...), whose dark values keep >= 4.5:1 against its backgrounds; the
`*-color1` variables do not (JupyterLab Dark's `--jp-error-color1` is 4.4:1 on its cell background).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["DARK_STYLE", "LIGHT", "colour", "link_style"]

# meaning -> (light colour, dark value)
_PALETTE: Mapping[str, tuple[str, str]] = {
    "error": ("#cf222e", "var(--jp-error-color2,#e57373)"),
    "ok": ("#1a7f37", "var(--jp-success-color2,#81c784)"),
    "info": ("#0969da", "var(--jp-brand-color2,#64b5f6)"),
    "warn": ("#9a6700", "var(--jp-warn-color2,#ffb74d)"),
    "muted": ("#57606a", "var(--jp-content-font-color2,rgba(255,255,255,.7))"),
    "faint": ("#6e7781", "var(--jp-content-font-color2,rgba(255,255,255,.7))"),
    "line": ("#d0d7de", "var(--jp-border-color1,#616161)"),
    "error-bg": ("#fff0f0", "rgba(244,67,54,.10)"),
}

LIGHT: Mapping[str, str] = {name: light for name, (light, _) in _PALETTE.items()}

_DARK_THEMES = 'body[data-jp-theme-light="false"],body.vscode-dark,body.vscode-high-contrast'
DARK_STYLE = (
    "<style>" + _DARK_THEMES + "{" + ";".join(f"--snb-{name}:{dark}" for name, (_, dark) in _PALETTE.items())
    + "}</style>"
)


def colour(name: str) -> str:
    """The CSS value for a meaning (`error`, `ok`, `info`, `warn`, `muted`, `faint`, `line`, `error-bg`)."""
    return f"var(--snb-{name},{_PALETTE[name][0]})"


def link_style() -> str:
    """The inline style of a link we write (frontends leave a bare `<a>` in an output plain text colour)."""
    return f"color:{colour('info')};text-decoration:underline"
