#!/usr/bin/env python3
"""Send a message to another svc agent without waiting for its answer.

usage: ask_agent_async.py [--new-session] <agent> <message...>
       ask_agent_async.py [--new-session] <agent> -        (message read from stdin)

Prints the task id on stdout (exit 0), or the error on stderr (exit 1). svc runs the request in
the background (up to interagent.async_timeout, 3600 s by default) and records its result.
Talks to svc's internal API on 127.0.0.1:$SVC_INTERAGENT_PORT as $SVC_AGENT_NAME, authenticated
with $SVC_INTERAGENT_TOKEN. The person you act for is $SVC_CALLER_USER_ID, set by svc; it cannot
be chosen here (the old --user-id flag was removed and exits with code 2).
"""
import sys

sys.dont_write_bytecode = True  # keep the workspace free of __pycache__
from svc_tool import Tool  # noqa: E402  (the script's own folder is on sys.path)

# svc answers at once with a task id.
tool = Tool("ask_agent_async.py", __doc__, http_timeout_s=60)


def main():
    agent, message, new_session = tool.parse(sys.argv[1:])
    reply = tool.post("/interagent/send_async", {"from": tool.me(), "to": agent, "message": message, "new_session": new_session})
    if reply.get("success") and reply.get("task_id"):
        sys.stdout.write("%s\n" % reply["task_id"])
        return 0
    tool.fail("agent %s: %s" % (agent, reply.get("error") or "not accepted"))


if __name__ == "__main__":
    sys.exit(main())
