"""OAuth 2.1 for HTTP MCP servers, on the SDK's providers: settings, token storage, the sign-in redirect.

storage.py (TokenStore: keyring or a 0600 file, per server URL), redirect.py (LoopbackReceiver,
`SignIn`, parsing the final redirect URL), provider.py (OAuthSession: the SDK provider for the grant,
wired to both), identity.py (SEP-990 leg 1), failure.py (one-line OAuthErrors), masking.py (OAuth
values masked in logs). The settings themselves are core (synapse_nb.oauth_settings), re-exported here.
Importing this package loads no SDK; import the modules for that.
"""

from __future__ import annotations

from ...oauth_settings import OAuthSettings

__all__ = ["OAuthSettings"]
