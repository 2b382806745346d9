#!/usr/bin/env python3
"""Send a message to another svc agent without waiting for its answer.

usage: ask_agent_async.py [--new-session] [--silent] [--reply-to WHERE] <agent> <message...>
       ask_agent_async.py [--new-session] [--silent] [--reply-to WHERE] <agent> -   (message from stdin)

Prints the task id on stdout (exit 0), or the error on stderr (exit 1; usage errors 2). svc runs
the request in the background (up to interagent.async_timeout, 3600 s by default), records its
result and delivers it to you as a new message in this chat (from $SVC_TRANSPORT, $SVC_CHAT_ID and
$SVC_TOPIC_ID), like a task's result.
  --reply-to WHERE  deliver it to another chat of yours instead: CHAT_ID, TRANSPORT:CHAT_ID or
                    TRANSPORT:CHAT_ID:TOPIC_ID (e.g. telegram:-1001234:7)
  --silent          only record the result; deliver nothing
Talks to svc's internal API on 127.0.0.1:$SVC_INTERAGENT_PORT as $SVC_AGENT_NAME, authenticated
with $SVC_INTERAGENT_TOKEN. The person you act for is $SVC_CALLER_USER_ID, set by svc; it cannot
be chosen here (the old --user-id flag was removed and exits with code 2).
"""
import os
import re
import sys

sys.dont_write_bytecode = True  # keep the workspace free of __pycache__
from svc_tool import Tool  # noqa: E402  (the script's own folder is on sys.path)

# svc answers at once with a task id.
tool = Tool("ask_agent_async.py", __doc__, http_timeout_s=60)

INT = re.compile(r"^-?[0-9]{1,19}$")
TRANSPORT = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


def reply_to_option(raw):
    parts = raw.split(":")
    if len(parts) == 1:
        parts = [""] + parts
    if len(parts) not in (2, 3) or (parts[0] and not TRANSPORT.match(parts[0])) or not all(INT.match(p) for p in parts[1:]):
        tool.fail("--reply-to must be CHAT_ID, TRANSPORT:CHAT_ID or TRANSPORT:CHAT_ID:TOPIC_ID, not %r" % raw, 2)
    where = {"chat_id": int(parts[1])}
    if parts[0]:
        where["transport"] = parts[0]
    if len(parts) == 3:
        where["topic_id"] = int(parts[2])
    return where


def this_chat():
    """The chat svc runs this agent in, when it is one (chat 0 is svc's own inter-agent conversation)."""
    chat = tool.env_int("SVC_CHAT_ID")
    if chat is None:
        return None
    where = {"chat_id": chat, "topic_id": tool.env_int("SVC_TOPIC_ID")}
    transport = os.environ.get("SVC_TRANSPORT", "").strip()
    if TRANSPORT.match(transport):
        where["transport"] = transport
    return where


def main():
    # As ask_agent.py: the removed flag is refused anywhere before `--`, not taken as message text.
    for arg in sys.argv[1:]:
        if arg == "--":
            break
        if tool.is_removed_user_id(arg):
            tool.fail("--user-id was removed: the caller identity comes only from SVC_CALLER_USER_ID, which svc sets", 2)
    opts, words = tool.options(sys.argv[1:], values=("--reply-to",), flags=("--new-session", "--silent"))
    if len(words) < 2:
        tool.usage(2)
    agent, message = words[0], tool.text(words[1:], "message")
    body = {"from": tool.me(), "to": agent, "message": message, "new_session": "--new-session" in opts}
    if "--silent" in opts:
        if "--reply-to" in opts:
            tool.fail("--silent delivers nothing: it cannot go with --reply-to", 2)
        body["silent"] = True
    else:
        where = reply_to_option(opts["--reply-to"]) if "--reply-to" in opts else this_chat()
        if where is not None:
            body["reply_to"] = where
    reply = tool.post("/interagent/send_async", body)
    if reply.get("success") and reply.get("task_id"):
        sys.stdout.write("%s\n" % reply["task_id"])
        return 0
    tool.fail("agent %s: %s" % (agent, reply.get("error") or "not accepted"))


if __name__ == "__main__":
    sys.exit(main())
