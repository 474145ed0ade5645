"""SecretRegistry: the values of one kernel that must never be shown or written, fanned out to every mask."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["SecretRegistry"]


class SecretRegistry:
    """Header and env values, API keys and tokens the kernel learned: each new one goes to every mask that
    subscribed (the history store's redactor, the cassette's mask, tracing), so none of them reaches the
    history file, a cassette, a span or the display."""

    def __init__(self) -> None:
        self._values: list[str] = []
        self._masks: list[Callable[[str], None]] = []

    @property
    def values(self) -> tuple[str, ...]:
        """Every secret known now, in the order they came."""
        return tuple(self._values)

    def add(self, value: str) -> None:
        """A value that must never be shown or written; empty and known values are ignored."""
        if not value or value in self._values:
            return
        self._values.append(value)
        for add in list(self._masks):
            add(value)

    def subscribe(self, add: Callable[[str], None], *, known: bool = True) -> Callable[[], None]:
        """Give `add` every secret from now on (and, with `known`, the ones known already); returns the
        unsubscribe function."""
        if known:
            for value in self._values:
                add(value)
        self._masks.append(add)

        def unsubscribe() -> None:
            if add in self._masks:
                self._masks.remove(add)

        return unsubscribe
