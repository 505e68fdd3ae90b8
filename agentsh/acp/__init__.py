"""``agentsh acp``: agentsh as an Agent Client Protocol agent, for Zed, toad and other editors.

A third front end beside the TUI and ``-p``, on the official ``agent-client-protocol`` package:
the client drives one :class:`~agentsh.frontend.EditorAPI` per session, and the agent's event
stream comes back as ``session/update`` notifications. The rooms:

- :mod:`.stdio`: the protocol owns stdout; everything else that prints goes to stderr.
- :mod:`.entry`: the entry point (``agentsh acp``).
- :mod:`.server`: the protocol's methods (initialize, session/new, load, list, prompt, cancel,
  set_mode) and the sessions they open.
- :mod:`.acp_session`: one session's prompt turn, events in, updates out.
- :mod:`.updates`: agentsh's events and log entries as ACP updates (tool calls, diffs, plans,
  notes, usage), pure functions.
- :mod:`.replay`: ``session/load`` replaying the current branch of a saved session.
- :mod:`.permissions`: approvals as ``session/request_permission``, with a time limit.
- :mod:`.client_host`: the client's file buffers and terminals, offered to the tools
  (:class:`agentsh.tools.host.ToolHost`).
- :mod:`.prompt`: the client's prompt content blocks as the text of a user message.
- :mod:`.mcp_servers`: the MCP servers the client passes, started beside agentsh's own.
"""
