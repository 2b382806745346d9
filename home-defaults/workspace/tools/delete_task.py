#!/usr/bin/env python3
"""Permanently remove one finished task (done, failed or cancelled): its entry and its folder.

usage: delete_task.py <task_id>

Prints "deleted <task_id>" on stdout (exit 0), or the error on stderr (exit 1; usage errors 2).
Only the agent that created a task may delete it.
"""
import sys

sys.dont_write_bytecode = True  # keep the workspace free of __pycache__
from svc_tool import Tool  # noqa: E402  (the script's own folder is on sys.path)

tool = Tool("delete_task.py", __doc__, http_timeout_s=60)


def main():
    _, words = tool.options(sys.argv[1:])
    if len(words) != 1 or not words[0].strip():
        tool.usage(2)
    task_id = words[0]
    reply = tool.post("/tasks/delete", {"task_id": task_id, "from": tool.me()})
    if reply.get("success"):
        sys.stdout.write("deleted %s\n" % task_id)
        return 0
    tool.fail("task %s: %s" % (task_id, reply.get("error") or "not deleted"))


if __name__ == "__main__":
    sys.exit(main())
