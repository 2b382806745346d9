#!/usr/bin/env python3
"""Continue a task with a new prompt, in the same session and folder.

usage: resume_task.py <task_id> <prompt...>
       resume_task.py <task_id> -        (prompt read from stdin)

A finished task (done, failed, cancelled) or one waiting for an answer runs again under the same
id; its result arrives in this chat as before. Prints the task id on stdout (exit 0), or the
error on stderr (exit 1; usage errors 2). Only the agent that created a task may resume it.
"""
import sys

sys.dont_write_bytecode = True  # keep the workspace free of __pycache__
from svc_tool import Tool  # noqa: E402  (the script's own folder is on sys.path)

tool = Tool("resume_task.py", __doc__, http_timeout_s=60)


def main():
    _, words = tool.options(sys.argv[1:])
    if len(words) < 2:
        tool.usage(2)
    task_id, prompt = words[0], tool.text(words[1:], "prompt")
    reply = tool.post("/tasks/resume", {"task_id": task_id, "prompt": prompt, "from": tool.me()})
    if reply.get("success"):
        sys.stdout.write("%s\n" % (reply.get("task_id") or task_id))
        return 0
    tool.fail("task %s: %s" % (task_id, reply.get("error") or "not resumed"))


if __name__ == "__main__":
    sys.exit(main())
