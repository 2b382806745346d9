#!/usr/bin/env python3
"""Ask another svc agent and wait for its answer.

usage: ask_agent.py [--new-session] <agent> <message...>
       ask_agent.py [--new-session] <agent> -        (message read from stdin)

Prints the agent's answer on stdout (exit 0), or the error on stderr (exit 1).
Talks to svc's internal API on 127.0.0.1:$SVC_INTERAGENT_PORT as $SVC_AGENT_NAME, authenticated
with $SVC_INTERAGENT_TOKEN. The person you act for is $SVC_CALLER_USER_ID, set by svc; it cannot
be chosen here (the old --user-id flag was removed and exits with code 2).
"""
import sys

sys.dont_write_bytecode = True  # keep the workspace free of __pycache__
from svc_tool import Tool  # noqa: E402  (the script's own folder is on sys.path)

# svc answers within interagent.sync_timeout (600 s by default); wait a little longer than that.
tool = Tool("ask_agent.py", __doc__, http_timeout_s=900)


def main():
    agent, message, new_session = tool.parse(sys.argv[1:])
    reply = tool.post("/interagent/send", {"from": tool.me(), "to": agent, "message": message, "new_session": new_session})
    if reply.get("success"):
        text = reply.get("text") or ""
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return 0
    detail = reply.get("error") or "failed"
    if reply.get("text"):
        detail += "\n" + reply["text"]
    tool.fail("agent %s: %s" % (agent, detail))


if __name__ == "__main__":
    sys.exit(main())
