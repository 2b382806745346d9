#!/usr/bin/env python3
"""svc sub-agent sandbox: Claude Code PreToolUse hook (Python 3 standard library only).

Blocks file tools (Read, Edit, Write, MultiEdit, NotebookEdit, Grep, Glob) whose target lies
outside the agent workspace ($SVC_HOME/agents/$SVC_AGENT_NAME/workspace) and the agent's
`additional_directories` from the registry. Every other tool, Bash included, passes.

Claude Code contract: exit 0 lets the call proceed; exit 2 blocks it and stderr is shown to the
model as the reason. Any other exit code does NOT block, so every failure on a file tool is turned
into exit 2 (fail closed): the matcher in settings.json only sends file tools here, and an input we
cannot understand must not become an open door.

The registry is read on every call so an operator's edit takes effect at once, without a restart.
"""

import json
import os
import re
import sys

FILE_TOOLS = ("Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "Grep", "Glob")
# Tools naming one file; a missing path is an error for them.
PATH_KEYS = {
    "Read": "file_path",
    "Edit": "file_path",
    "Write": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
AGENT_NAME = re.compile(r"^[a-z0-9_-]+$")
GLOB_MAGIC = re.compile(r"[*?\[{]")
MAX_BRACE_EXPANSIONS = 256
MAX_STDIN_BYTES = 16 * 1024 * 1024


class Blocked(Exception):
    """The call must not run; the message is what the model reads."""


def block(message):
    sys.stderr.write("svc sandbox: " + message + "\n")
    sys.exit(2)


def svc_home():
    raw = os.environ.get("SVC_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".svc")
    return os.path.abspath(os.path.expanduser(raw))


def registry_entries(home):
    """Entries of the registry in use; missing, unreadable or malformed means none."""
    for path in (os.path.join(home, "_secrets", "agents.json"), os.path.join(home, "agents.json")):
        if not os.path.exists(path):
            continue
        try:
            with open(path, "r", encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            return []
        return data if isinstance(data, list) else []
    return []


def additional_directories(home, agent):
    for entry in registry_entries(home):
        if isinstance(entry, dict) and entry.get("name") == agent:
            dirs = entry.get("additional_directories")
            if not isinstance(dirs, list):
                return []
            # The registry schema only allows absolute paths; anything else is ignored, not guessed at.
            return [d for d in dirs if isinstance(d, str) and d and "\0" not in d and os.path.isabs(os.path.expanduser(d))]
    return []


def real(path):
    return os.path.realpath(os.path.expanduser(path))


def inside(path, root):
    if path == root:
        return True
    prefix = root if root.endswith(os.sep) else root + os.sep
    return path.startswith(prefix)


def resolve(raw, cwd, what):
    if not isinstance(raw, str) or raw == "":
        raise Blocked("%s is missing or not a string" % what)
    if "\0" in raw:
        raise Blocked("%s contains a NUL byte" % what)
    expanded = os.path.expanduser(raw)
    return real(expanded if os.path.isabs(expanded) else os.path.join(cwd, expanded))


def expand_braces(pattern):
    """`a{b,c}d` -> [abd, acd], recursively; bounded so a hostile pattern cannot blow up."""
    depth, start = 0, -1
    for i, ch in enumerate(pattern):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                body, parts, level, last = pattern[start + 1:i], [], 0, 0
                for j, c in enumerate(body):
                    if c == "{":
                        level += 1
                    elif c == "}":
                        level -= 1
                    elif c == "," and level == 0:
                        parts.append(body[last:j])
                        last = j + 1
                parts.append(body[last:])
                if len(parts) == 1:
                    continue  # `{x}` with no comma is literal to most glob engines; keep scanning
                out = []
                for part in parts:
                    out.extend(expand_braces(pattern[:start] + part + pattern[i + 1:]))
                    if len(out) > MAX_BRACE_EXPANSIONS:
                        raise Blocked("glob pattern expands to more than %d alternatives" % MAX_BRACE_EXPANSIONS)
                return out
    return [pattern]


def glob_targets(pattern, base):
    """Directories a glob can reach: its literal leading segments joined on the search base."""
    if not isinstance(pattern, str) or pattern == "":
        raise Blocked("Glob pattern is missing or not a string")
    if "\0" in pattern:
        raise Blocked("Glob pattern contains a NUL byte")
    targets = []
    for alt in expand_braces(pattern):
        alt = os.path.expanduser(alt)
        segments = alt.split("/")
        literal = []
        for k, seg in enumerate(segments):
            if GLOB_MAGIC.search(seg):
                if ".." in segments[k:]:
                    raise Blocked("Glob pattern %r climbs with '..' after a wildcard" % pattern)
                break
            literal.append(seg)
        prefix = "/".join(literal)
        if alt.startswith("/") and prefix == "":
            prefix = "/"
        targets.append(real(os.path.join(base, prefix) if prefix else base))
    return targets


def targets_of(tool, tool_input, cwd):
    if not isinstance(tool_input, dict):
        raise Blocked("%s call has no tool_input object" % tool)
    key = PATH_KEYS.get(tool)
    if key is not None:
        raw = tool_input.get(key)
        # Tolerate a CLI version that names the field differently rather than fail open or closed on it.
        if raw is None:
            for alt in ("file_path", "notebook_path", "path"):
                if tool_input.get(alt) is not None:
                    raw, key = tool_input.get(alt), alt
                    break
        return [resolve(raw, cwd, "%s.%s" % (tool, key))]
    # Grep and Glob search `path`, defaulting to the working directory.
    raw_base = tool_input.get("path")
    base = cwd if raw_base in (None, "") else resolve(raw_base, cwd, "%s.path" % tool)
    if tool == "Glob":
        return glob_targets(tool_input.get("pattern"), base)
    return [base]


def main():
    raw = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
    if len(raw) > MAX_STDIN_BYTES:
        block("hook input is over %d bytes; the call was blocked" % MAX_STDIN_BYTES)
    try:
        event = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        block("could not parse the hook input as JSON (%s); the call was blocked because its target "
              "path cannot be checked" % err)
    if not isinstance(event, dict):
        block("hook input is not a JSON object; the call was blocked because its target path cannot be checked")

    tool = event.get("tool_name")
    if tool not in FILE_TOOLS:
        sys.exit(0)

    agent = os.environ.get("SVC_AGENT_NAME", "")
    if not AGENT_NAME.match(agent):
        block("SVC_AGENT_NAME is %r, not an agent name (a-z, 0-9, _ and -); %s was blocked" % (agent, tool))
    home = svc_home()
    workspace = real(os.path.join(home, "agents", agent, "workspace"))
    roots = [workspace] + [real(d) for d in additional_directories(home, agent)]

    cwd = event.get("cwd")
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        cwd = os.getcwd()

    try:
        targets = targets_of(tool, event.get("tool_input"), cwd)
    except Blocked as err:
        block("%s; %s was blocked" % (err, tool))

    for target in targets:
        if not any(inside(target, root) for root in roots):
            block(
                "%s of %s is outside the directories agent %r may use: %s. Work inside your workspace; "
                "only the operator can add directories (additional_directories in the agent registry)."
                % (tool, target, agent, ", ".join(roots))
            )
    sys.exit(0)


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except BaseException as err:  # noqa: BLE001 - any crash must block, not exit 1 (which lets the call through)
        block("internal error while checking the call (%s: %s); the call was blocked" % (type(err).__name__, err))
