"""Shared by svc's agent tool scripts: argument parsing and the call to svc's internal API.

Talks to 127.0.0.1:$SVC_INTERAGENT_PORT as $SVC_AGENT_NAME, authenticated with
$SVC_INTERAGENT_TOKEN. The person the agent acts for is $SVC_CALLER_USER_ID, set by svc; it
cannot be chosen by the caller (the old --user-id flag was removed and exits with code 2).
"""
import json
import os
import sys
import urllib.error
import urllib.request


class Tool:
    """One tool script: its name (for messages), its usage text and how long it waits for svc."""

    def __init__(self, prog, doc, http_timeout_s):
        self.prog = prog
        self.doc = doc
        self.http_timeout_s = http_timeout_s

    def fail(self, msg, code=1):
        sys.stderr.write("%s: %s\n" % (self.prog, msg))
        sys.exit(code)

    def usage(self, code):
        (sys.stdout if code == 0 else sys.stderr).write(self.doc.strip() + "\n")
        sys.exit(code)

    @staticmethod
    def is_removed_user_id(arg):
        name = arg.split("=", 1)[0]
        return name in ("--user-id", "--user_id", "--userid", "--uid")

    def parse(self, argv):
        new_session = False
        rest = []
        options_done = False
        for arg in argv:
            if not options_done and self.is_removed_user_id(arg):
                self.fail("--user-id was removed: the caller identity comes only from SVC_CALLER_USER_ID, which svc sets", 2)
            if options_done or rest:
                rest.append(arg)
            elif arg == "--":
                options_done = True
            elif arg in ("-h", "--help"):
                self.usage(0)
            elif arg == "--new-session":
                new_session = True
            elif arg.startswith("-") and arg != "-":
                self.fail("unknown option %s (see --help)" % arg, 2)
            else:
                rest.append(arg)
        if len(rest) < 2:
            self.usage(2)
        agent, words = rest[0], rest[1:]
        message = sys.stdin.read() if words == ["-"] else " ".join(words)
        if not message.strip():
            self.fail("the message is empty", 2)
        return agent, message, new_session

    def post(self, path, body):
        port = os.environ.get("SVC_INTERAGENT_PORT", "8799").strip() or "8799"
        if not port.isdigit():
            self.fail("SVC_INTERAGENT_PORT is %r, not a port number" % port)
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
            with urllib.request.urlopen(req, timeout=self.http_timeout_s) as res:
                return json.loads(res.read().decode("utf-8"))
        except urllib.error.HTTPError as e:
            raw = e.read().decode("utf-8", "replace")
            try:
                detail = json.loads(raw).get("error") or raw
            except (ValueError, AttributeError):
                detail = raw or e.reason
            self.fail("%s (HTTP %d)" % (detail, e.code))
        except urllib.error.URLError as e:
            if isinstance(e.reason, ConnectionRefusedError):
                self.fail("svc is not running (nothing listens on 127.0.0.1:%s)" % port)
            self.fail("cannot reach svc at %s: %s" % (url, e.reason))
        except (TimeoutError, OSError) as e:
            self.fail("no answer from svc at %s: %s" % (url, e))
        except ValueError:
            self.fail("svc answered with something that is not JSON")

    def me(self):
        name = os.environ.get("SVC_AGENT_NAME", "").strip()
        if not name:
            self.fail("SVC_AGENT_NAME is not set: run this from an svc agent session")
        return name
