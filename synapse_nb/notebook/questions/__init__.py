"""Questions to the user: tool approval, servers' elicitation forms and links, sampling approval, OAuth sign-in."""
