"""Models: the providers one kernel's turns use, resolved by model id (the kernel's model by default)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import SynapseError
from .usage import usage_error

if TYPE_CHECKING:
    from ..protocols import Provider
    from ..providers.registry import ProviderCache
    from .kernel.runner import Runner
    from .recording.tape import TapeDeck
    from .secrets import SecretRegistry
    from .sessions import Sessions

__all__ = ["Models"]


class Models:
    """Resolves a model id to its provider: through a cache that notices a changed key or base URL, wrapped
    by the `deck`'s tape while recording (or answered by it while replaying). `model` is the kernel's model
    (`%synapse model ID`); the environment's secret values join the kernel's `secrets`; a replaced provider
    is closed on the `runner` once no background run of `sessions` could still be streaming through it."""

    def __init__(self, secrets: SecretRegistry, deck: TapeDeck, sessions: Sessions, runner: Runner) -> None:
        self._secrets = secrets
        self._deck = deck
        self._sessions = sessions
        self._runner = runner
        self.model: str | None = None  # set by `%synapse model ID`
        self.cache: ProviderCache | None = None  # built on first use (httpx is imported then)

    def provider(self, model_id: str | None) -> Provider:
        """The provider for a model id (None: the kernel's model, else SYNAPSE_MODEL, else scripted:demo).

        A key or base URL changed in the environment (`%env`, after a 401) gives a new provider at the
        next call, and the replaced one is closed in the background on the runner's loop (once no
        background run could still be using it). The environment's secret values (a key set since the
        kernel started among them) become secrets of the history and the display.
        """
        from ..masking import secret_env_values
        from ..providers.registry import ProviderCache

        if self.cache is None:
            self.cache = ProviderCache()
        tape = self._deck.tape
        try:
            if tape is not None and tape.cassette is not None:  # replaying: no key, no network
                return tape.provider(model_id or self.model or None, None)
            provider = self.cache.get(model_id or self.model or None)
        except SynapseError as exc:
            raise usage_error(exc) from None
        for value in secret_env_values():
            self._secrets.add(value)
        # A background run may still stream through a replaced provider: close it once none runs.
        if self.cache.retired and self._sessions.all_done():
            self._runner.spawn(self.cache.aclose_retired(), name="synapse: close replaced providers")
        return provider if tape is None else tape.provider(model_id, provider)

    async def aclose(self) -> None:
        """Close every provider (their HTTP clients)."""
        if self.cache is not None:
            await self.cache.aclose()
