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
import json
import os
import sys
import urllib.error
import urllib.request

PROG = "ask_agent_async.py"
PATH = "/interagent/send_async"
# svc answers at once with a task id.
HTTP_TIMEOUT_S = 60


def fail(msg, code=1):
    sys.stderr.write("%s: %s\n" % (PROG, msg))
    sys.exit(code)


def usage(code):
    (sys.stdout if code == 0 else sys.stderr).write(__doc__.strip() + "\n")
    sys.exit(code)


def is_removed_user_id(arg):
    name = arg.split("=", 1)[0]
    return name in ("--user-id", "--user_id", "--userid", "--uid")


def parse(argv):
    new_session = False
    rest = []
    options_done = False
    for arg in argv:
        if not options_done and is_removed_user_id(arg):
            fail("--user-id was removed: the caller identity comes only from SVC_CALLER_USER_ID, which svc sets", 2)
        if options_done or rest:
            rest.append(arg)
        elif arg == "--":
            options_done = True
        elif arg in ("-h", "--help"):
            usage(0)
        elif arg == "--new-session":
            new_session = True
        elif arg.startswith("-") and arg != "-":
            fail("unknown option %s (see --help)" % arg, 2)
        else:
            rest.append(arg)
    if len(rest) < 2:
        usage(2)
    agent, words = rest[0], rest[1:]
    message = sys.stdin.read() if words == ["-"] else " ".join(words)
    if not message.strip():
        fail("the message is empty", 2)
    return agent, message, new_session


def post(path, body):
    port = os.environ.get("SVC_INTERAGENT_PORT", "8799").strip() or "8799"
    if not port.isdigit():
        fail("SVC_INTERAGENT_PORT is %r, not a port number" % port)
    headers = {"Content-Type": "application/json", "Connection": "close"}
    token = os.environ.get("SVC_INTERAGENT_TOKEN", "").strip()
    if token:
        headers["Authorization"] = "Bearer " + token
    caller = os.environ.get("SVC_CALLER_USER_ID", "").strip()
    if caller:
        headers["X-SVC-Caller-User-Id"] = caller
    url = "http://127.0.0.1:%s%s" % (port, path)
    req = urllib.request.Request(url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT_S) as res:
            return json.loads(res.read().decode("utf-8"))
    except urllib.error.HTTPError as e:
        raw = e.read().decode("utf-8", "replace")
        try:
            detail = json.loads(raw).get("error") or raw
        except (ValueError, AttributeError):
            detail = raw or e.reason
        fail("%s (HTTP %d)" % (detail, e.code))
    except urllib.error.URLError as e:
        if isinstance(e.reason, ConnectionRefusedError):
            fail("svc is not running (nothing listens on 127.0.0.1:%s)" % port)
        fail("cannot reach svc at %s: %s" % (url, e.reason))
    except (TimeoutError, OSError) as e:
        fail("no answer from svc at %s: %s" % (url, e))
    except ValueError:
        fail("svc answered with something that is not JSON")


def main():
    agent, message, new_session = parse(sys.argv[1:])
    me = os.environ.get("SVC_AGENT_NAME", "").strip()
    if not me:
        fail("SVC_AGENT_NAME is not set: run this from an svc agent session")
    reply = post(PATH, {"from": me, "to": agent, "message": message, "new_session": new_session})
    if reply.get("success") and reply.get("task_id"):
        sys.stdout.write("%s\n" % reply["task_id"])
        return 0
    fail("agent %s: %s" % (agent, reply.get("error") or "not accepted"))


if __name__ == "__main__":
    sys.exit(main())
