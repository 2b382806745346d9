#!/usr/bin/env python3
"""List background tasks: yours by default.

usage: list_tasks.py [--all] [--json]

One line per task: id, status (running, waiting, done, failed, cancelled), name. --all lists every
agent's tasks svc lets you see; --json prints svc's answer as it is.
"""
import json
import sys

sys.dont_write_bytecode = True  # keep the workspace free of __pycache__
from svc_tool import Tool  # noqa: E402  (the script's own folder is on sys.path)

tool = Tool("list_tasks.py", __doc__, http_timeout_s=60)


def main():
    opts, words = tool.options(sys.argv[1:], flags=("--all", "--json"))
    if words:
        tool.usage(2)
    reply = tool.get("/tasks/list", None if "--all" in opts else {"from": tool.me()})
    tasks = reply.get("tasks", []) if isinstance(reply, dict) else reply
    if not isinstance(tasks, list):
        tool.fail("svc answered with something that is not a task list")
    if "--json" in opts:
        sys.stdout.write(json.dumps(tasks, indent=2, ensure_ascii=False) + "\n")
        return 0
    if not tasks:
        sys.stdout.write("no tasks\n")
        return 0
    for task in tasks:
        if isinstance(task, dict):
            sys.stdout.write("%s\t%s\t%s\n" % (task.get("task_id", "?"), task.get("status", "?"), task.get("name") or ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
