"""The TLS context of the providers' HTTP clients: built once per process and shared, never for plain http.

httpx builds a fresh context for every AsyncClient, loading the whole CA bundle: 0.2-0.4 s on a busy
2-core machine, paid by each provider as it is created, on the kernel's loop, before the cell that
asked for it shows anything. The context here is httpx's own default (certifi, or SSL_CERT_FILE /
SSL_CERT_DIR), built on first https use and reused by every provider of the process. A provider whose
base URL is plain http (a local server) never uses TLS: its client gets a context that still verifies
but holds no CAs, so nothing is loaded (no redirect is followed, and one to https would fail closed).
"""

from __future__ import annotations

import functools
import os
import ssl

import httpx

__all__ = ["tls_context"]


def tls_context(base_url: str) -> ssl.SSLContext:
    """The context for a client that talks to `base_url` only (see the module docstring)."""
    if base_url.lower().startswith("http://"):
        return _no_cas()
    return _shared(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.lru_cache(maxsize=4)
def _shared(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """httpx's default context, once per CA setting (`cert_file` / `cert_dir` key the cache: httpx reads them)."""
    return httpx.create_ssl_context()


def _no_cas() -> ssl.SSLContext:
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # CERT_REQUIRED and check_hostname, with no CA to trust
