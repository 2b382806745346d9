#!/usr/bin/env python3
"""From inside a task: ask the agent that started it a question, and wait for the answer.

usage: ask_parent.py [--task TASK_ID] <question...>
       ask_parent.py [--task TASK_ID] -        (question read from stdin)

The task is $SVC_TASK_ID, which svc sets for a task's run (or the task folder you run in:
workspace/tasks/<id>/); --task names another. The task waits, shown as "waiting for answer",
until the parent answers; the answer is printed on stdout (exit 0). If the task is cancelled
meanwhile, or svc refuses, the reason is on stderr (exit 1; usage errors 2).
"""
import os
import sys

sys.dont_write_bytecode = True  # keep the workspace free of __pycache__
from svc_tool import Tool  # noqa: E402  (the script's own folder is on sys.path)

# An answer may take as long as a person does: up to the task's own timeout (tasks.timeout_seconds, 3600 s by default).
tool = Tool("ask_parent.py", __doc__, http_timeout_s=4000)


def this_task():
    task = os.environ.get("SVC_TASK_ID", "").strip()
    if task:
        return task
    cwd = os.path.realpath(os.getcwd())
    if os.path.basename(os.path.dirname(cwd)) == "tasks":
        return os.path.basename(cwd)
    tool.fail("no task: run this inside a task (svc sets SVC_TASK_ID) or name one with --task", 2)


def main():
    opts, words = tool.options(sys.argv[1:], values=("--task",))
    if not words:
        tool.usage(2)
    task_id = opts.get("--task") or this_task()
    question = tool.text(words, "question")
    reply = tool.post("/tasks/ask_parent", {"task_id": task_id, "question": question})
    if reply.get("success"):
        answer = reply.get("answer") or ""
        sys.stdout.write(answer if answer.endswith("\n") else answer + "\n")
        return 0
    tool.fail("task %s: %s" % (task_id, reply.get("error") or "no answer"))


if __name__ == "__main__":
    sys.exit(main())
