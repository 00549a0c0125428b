"""A `lector serve` started by a script on a free loopback port and a temporary data directory,
and a small client for it (standard library only; the self-signed certificate is not checked).
Used by scripts/bench-api and scripts/api-fuzz."""

import glob
import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TLS = ssl.create_default_context()
TLS.check_hostname = False
TLS.verify_mode = ssl.CERT_NONE
PASSWORD = "password-123"


class Server:
    """`binary serve` on SQLite in its data directory, or on `database_url`."""

    def __init__(self, binary=None, workers=1, database_url=None):
        self.dir = tempfile.mkdtemp(prefix="lector-script-")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.base = f"https://127.0.0.1:{self.port}"
        binary = binary or os.path.join(ROOT, "target/release/lector")
        self.log = open(os.path.join(self.dir, "serve.log"), "w")
        env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "warn"))
        if database_url:
            env["LECTOR_DATABASE_URL"] = database_url
        self.process = subprocess.Popen(
            [binary, "serve", "--listen", f"127.0.0.1:{self.port}", "--data-dir", self.dir,
             "--workers", str(workers)],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        for _ in range(400):
            try:
                self.call("GET", "/health")
                return
            except (urllib.error.URLError, ConnectionError, OSError):
                if self.process.poll() is not None:
                    break
                time.sleep(0.05)
        raise SystemExit(f"the server did not start; see {self.log.name}")

    def call(self, method, path, body=None, token=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("content-type", "application/json")
        if token:
            request.add_header("authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, context=TLS, timeout=600) as answer:
                return json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as e:
            raise SystemExit(f"{method} {path}: {e.code} {e.read()[:500]!r}")

    def register(self, email):
        answer = self.call("POST", "/auth/register",
                           {"email": email, "password": PASSWORD, "first_name": "Script"})
        return answer["auth_token"]

    def project(self, token, name, kind, names):
        """A project of `kind` with these classes (CLASS) or labels (LABEL)."""
        project = self.call("POST", "/projects", {"name": name, "type": kind}, token)
        what = "classes" if kind == "CLASS" else "labels"
        for n in names:
            self.call("POST", f"/projects/{project['id']}/{what}", {"name": n}, token)
        return project["id"]

    def mail_token(self, email):
        """The token of the last mail to `email` (the mail job runs shortly after the request)."""
        for _ in range(200):
            for path in sorted(glob.glob(os.path.join(self.dir, "mail", "*")), key=os.path.getmtime,
                               reverse=True):
                text = open(path, encoding="utf-8", errors="replace").read()
                if email in text:
                    for line in text.splitlines():
                        if line.startswith("Token: "):
                            return line[len("Token: "):].strip()
            time.sleep(0.05)
        raise SystemExit(f"no mail with a token to {email}")

    def member(self, token, workspace, email, role):
        """A new user invited into `workspace` with `role`; answers its token."""
        self.call("POST", f"/organizations/{workspace}/users/invite",
                  {"role": role, "emails": [email]}, token)
        accepted = self.call("POST", "/organizations/users/invite/accept",
                             {"token": self.mail_token(email), "password": PASSWORD,
                              "first_name": role.title()})
        return accepted["auth_token"]

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
