#!/usr/bin/env python3
"""Start a background task: another run of an agent, in its own folder, that reports back here.

usage: create_task.py [--name NAME] [--provider P] [--model M] <prompt...>
       create_task.py [--name NAME] [--provider P] [--model M] -      (prompt read from stdin)

Prints the new task's id on stdout (exit 0), or the error on stderr (exit 1; usage errors 2).
The task runs in workspace/tasks/<id>/ while this chat stays free; its result (or a question for
you, see ask_parent.py) arrives in this chat. svc fills in this chat from $SVC_CHAT_ID and
$SVC_TOPIC_ID. Talks to svc's internal API on 127.0.0.1:$SVC_INTERAGENT_PORT as $SVC_AGENT_NAME,
authenticated with $SVC_INTERAGENT_TOKEN.
"""
import sys

sys.dont_write_bytecode = True  # keep the workspace free of __pycache__
from svc_tool import Tool  # noqa: E402  (the script's own folder is on sys.path)

tool = Tool("create_task.py", __doc__, http_timeout_s=60)


def main():
    opts, words = tool.options(sys.argv[1:], values=("--name", "--provider", "--model"))
    if not words:
        tool.usage(2)
    body = {"from": tool.me(), "prompt": tool.text(words, "prompt")}
    for opt in ("--name", "--provider", "--model"):
        if opt in opts:
            body[opt[2:]] = opts[opt]
    for field, env in (("chat_id", "SVC_CHAT_ID"), ("topic_id", "SVC_TOPIC_ID")):
        value = tool.env_int(env)
        if value is not None:
            body[field] = value
    reply = tool.post("/tasks/create", body)
    if reply.get("success") and reply.get("task_id"):
        sys.stdout.write("%s\n" % reply["task_id"])
        return 0
    tool.fail(reply.get("error") or "the task was not created")


if __name__ == "__main__":
    sys.exit(main())
