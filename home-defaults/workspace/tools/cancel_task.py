#!/usr/bin/env python3
"""Stop a running or waiting task; it ends as cancelled and can be resumed later.

usage: cancel_task.py <task_id>

Prints "cancelled <task_id>" on stdout (exit 0), or the error on stderr (exit 1; usage errors 2).
Only the agent that created a task may cancel it.
"""
import sys

sys.dont_write_bytecode = True  # keep the workspace free of __pycache__
from svc_tool import Tool  # noqa: E402  (the script's own folder is on sys.path)

tool = Tool("cancel_task.py", __doc__, http_timeout_s=60)

if __name__ == "__main__":
    sys.exit(tool.task_op("cancel", "cancelled"))
