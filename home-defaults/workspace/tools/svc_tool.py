"""Shared by svc's agent tool scripts: argument parsing and the call to svc's internal API.

Talks to 127.0.0.1:$SVC_INTERAGENT_PORT as $SVC_AGENT_NAME, authenticated with
$SVC_INTERAGENT_TOKEN. The person the agent acts for is $SVC_CALLER_USER_ID, set by svc; it
cannot be chosen by the caller (the old --user-id flag was removed and exits with code 2).
"""
import json
import os
import sys
import urllib.error
import urllib.parse
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

    def options(self, argv, values=(), flags=()):
        """Splits argv into ({option: value or True}, [positional...]) for the task tools.

        Options come before the first positional word (after it, words are the text); `--` ends
        them; -h/--help prints the usage; an unknown option is a usage error (exit 2).
        """
        opts = {}
        rest = []
        i = 0
        while i < len(argv):
            arg = argv[i]
            i += 1
            if rest:
                rest.append(arg)
                continue
            if self.is_removed_user_id(arg):
                self.fail("--user-id was removed: the caller identity comes only from SVC_CALLER_USER_ID, which svc sets", 2)
            if arg == "--":
                rest.extend(argv[i:])
                break
            if arg in ("-h", "--help"):
                self.usage(0)
            name, eq, inline = arg.partition("=")
            if name in values:
                if eq:
                    opts[name] = inline
                elif i < len(argv):
                    opts[name] = argv[i]
                    i += 1
                else:
                    self.fail("%s needs a value (see --help)" % name, 2)
                if not opts[name].strip():
                    self.fail("%s must not be empty" % name, 2)
            elif arg in flags:
                opts[arg] = True
            elif arg.startswith("-") and arg != "-":
                self.fail("unknown option %s (see --help)" % arg, 2)
            else:
                rest.append(arg)
        return opts, rest

    def text(self, words, what):
        """The words as one text, or standard input for a lone `-`; empty is a usage error."""
        text = sys.stdin.read() if words == ["-"] else " ".join(words)
        if not text.strip():
            self.fail("the %s is empty" % what, 2)
        return text

    @staticmethod
    def env_int(name):
        """A positive integer from the environment (svc sets SVC_CHAT_ID, SVC_TOPIC_ID), else None."""
        raw = os.environ.get(name, "").strip()
        return int(raw) if raw.isdigit() and int(raw) > 0 else None

    def post(self, path, body):
        return self.call("POST", path, body)

    def get(self, path, query=None):
        qs = ("?" + urllib.parse.urlencode(query)) if query else ""
        return self.call("GET", path + qs, None)

    def call(self, method, path, body):
        port = os.environ.get("SVC_INTERAGENT_PORT", "8799").strip() or "8799"
        if not port.isdigit():
            self.fail("SVC_INTERAGENT_PORT is %r, not a port number" % port)
        headers = {"Connection": "close"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        token = os.environ.get("SVC_INTERAGENT_TOKEN", "").strip()
        if token:
            headers["Authorization"] = "Bearer " + token
        caller = os.environ.get("SVC_CALLER_USER_ID", "").strip()
        if caller:
            headers["X-SVC-Caller-User-Id"] = caller
        url = "http://127.0.0.1:%s%s" % (port, path)
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
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

    def task_op(self, op, done):
        """`<op>_task.py <task_id>`: one call to /tasks/<op> as the task's owner, the outcome in one line."""
        _, words = self.options(sys.argv[1:])
        if len(words) != 1 or not words[0].strip():
            self.usage(2)
        task_id = words[0]
        reply = self.post("/tasks/" + op, {"task_id": task_id, "from": self.me()})
        if reply.get("success"):
            sys.stdout.write("%s %s\n" % (done, task_id))
            return 0
        self.fail("task %s: %s" % (task_id, reply.get("error") or "not " + done))
