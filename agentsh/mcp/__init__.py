"""The MCP client: tools from Model Context Protocol servers, as ordinary agent tools.

``config`` reads which servers exist (Claude Code's ``.mcp.json`` / ``mcp.json``,
``[mcp.servers]`` in config.toml, an ACP client's list); ``trust`` puts a project's servers in
the project trust question; ``names`` makes names every provider accepts; ``schema`` checks a
tool's schema and the model's arguments; ``results`` turns a result into text for the model;
``connection`` runs one server under supervision, ``groups`` makes sure its processes die with
it, and ``loop`` is the background event loop they all run on; ``manager`` owns the servers of
one agent and publishes ``state`` snapshots; ``cache`` keeps their last tool lists for
counting; ``tools`` adapts them to :class:`agentsh.tools.base.Tool` (with ``mcp_search`` when
their definitions would take too much of the window). Only ``connection`` and ``manager``
import the ``mcp`` SDK, and only once a server starts: it costs seconds to import.
"""
