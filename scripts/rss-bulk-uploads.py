"""Peak RSS of `lector serve` under six concurrent ~50 MB upload-documents requests.

Usage: python3 scripts/rss-bulk-uploads.py target/debug/lector 18443 (any free port); set
MALLOC_ARENA_MAX=2 in the environment to see the effect of fewer malloc arenas. Figures: docs/SECURITY.md.
"""
import json, os, ssl, subprocess, sys, tempfile, threading, time, urllib.request

binary, port = sys.argv[1], sys.argv[2]
data = tempfile.mkdtemp()
# The six uploads share one token: let them all be handled at once (http.requests_per_caller).
env = dict(os.environ, LECTOR_LISTEN=f"127.0.0.1:{port}", LECTOR_DATA_DIR=data, LECTOR_WORKERS="0",
           LECTOR_HTTP__REQUESTS_PER_CALLER="64",
           LECTOR_PASSWORD_HASHING__MEMORY_KIB="64", LECTOR_PASSWORD_HASHING__ITERATIONS="1")
server = subprocess.Popen([binary, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
ctx = ssl._create_unverified_context()
base = f"https://127.0.0.1:{port}"

def call(path, body, token=None):
    req = urllib.request.Request(base + path, data=body, method="POST")
    req.add_header("content-type", "application/json")
    if token: req.add_header("authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=600) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()

def rss():
    fields = dict(l.split(":", 1) for l in open(f"/proc/{server.pid}/status"))
    return int(fields["VmRSS"].split()[0]) // 1024, int(fields["VmHWM"].split()[0]) // 1024

for _ in range(100):
    try:
        if call("/auth/register", json.dumps({"email": "a@example.org", "password": "password-123"}).encode())[0]: break
    except Exception: time.sleep(0.3)
status, answer = call("/auth/login", json.dumps({"email": "a@example.org", "password": "password-123"}).encode())
token = json.loads(answer)["auth_token"]
status, answer = call("/projects", json.dumps({"name": "Big", "type": "CLASS"}).encode(), token)
project = json.loads(answer)["id"]
doc = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 9
body = json.dumps([{"text": doc} for _ in range(96_000)]).encode()
print("body MB", round(len(body) / 1e6, 1), "idle RSS MiB", rss()[0])
results = []
threads = [threading.Thread(target=lambda: results.append(call(f"/projects/{project}/upload-documents", body, token)[0])) for _ in range(6)]
peak = 0
for t in threads: t.start()
while any(t.is_alive() for t in threads):
    peak = max(peak, rss()[0]); time.sleep(0.05)
print("statuses", results, "peak RSS MiB", max(peak, rss()[1]), "after RSS MiB", rss()[0])
server.terminate(); server.wait()
