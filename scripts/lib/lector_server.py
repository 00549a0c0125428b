"""A small client for any Lector address, and a `lector serve` started by a script on a free
loopback port and a temporary data directory (standard library only; the self-signed
certificate is not checked). Used by scripts/bench-api, scripts/api-fuzz and scripts/cluster."""

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
import uuid

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TLS = ssl.create_default_context()
TLS.check_hostname = False
TLS.verify_mode = ssl.CERT_NONE
PASSWORD = "password-123"


def free_port():
    """A loopback port nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def multipart(name, content, fields=None):
    """A multipart form with `content` (bytes) as its `file` called `name`, and text `fields`;
    answers (body, content-type header)."""
    boundary = uuid.uuid4().hex
    parts = [f'--{boundary}\r\ncontent-disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'.encode()
             for key, value in (fields or {}).items()]
    parts.append(f'--{boundary}\r\ncontent-disposition: form-data; name="file"; filename="{name}"\r\n'
                 f"content-type: application/octet-stream\r\n\r\n".encode() + content + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


class ApiError(Exception):
    """An answer with an error status: its status, headers and body."""

    def __init__(self, method, path, status, headers, body):
        super().__init__(f"{method} {path}: {status} {body[:500]!r}")
        self.status, self.headers, self.body = status, headers, body


class Client:
    """Calls the Lector at `base` (https://host:port)."""

    def __init__(self, base):
        self.base = base

    def request(self, method, path, body=None, token=None, headers=None, timeout=600):
        """Answers (status, headers, body bytes), error statuses included; raises OSError
        (URLError among them) when the connection fails."""
        data = body if isinstance(body, bytes) else None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("content-type", "application/json")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        if token:
            request.add_header("authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, context=TLS, timeout=timeout) as answer:
                return answer.status, answer.headers, answer.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def try_call(self, method, path, body=None, token=None, headers=None):
        """The decoded answer; raises ApiError for an error status."""
        status, answer_headers, data = self.request(method, path, body, token, headers)
        if status >= 400:
            raise ApiError(method, path, status, answer_headers, data)
        return json.loads(data or b"null")

    def call(self, method, path, body=None, token=None):
        """The decoded answer; an error status ends the script."""
        try:
            return self.try_call(method, path, body, token)
        except ApiError as e:
            raise SystemExit(str(e))

    def upload(self, path, name, content, token, fields=None):
        """POSTs a multipart form with `content` (bytes) as its `file` called `name`; raises
        ApiError for an error status."""
        body, content_type = multipart(name, content, fields)
        return self.try_call("POST", path, body, token, {"content-type": content_type})

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


class Server(Client):
    """`binary serve` on SQLite in its data directory, or on `database_url`."""

    def __init__(self, binary=None, workers=1, database_url=None):
        self.dir = tempfile.mkdtemp(prefix="lector-script-")
        self.port = free_port()
        super().__init__(f"https://127.0.0.1:{self.port}")
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
