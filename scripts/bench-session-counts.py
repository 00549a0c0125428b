"""Time of the requests that read a labeling session's counts, on a project of many documents
with many sessions over all of them: listing the sessions, reading one, marking a segment,
tagging one.

Usage: python3 scripts/bench-session-counts.py BINARY PORT DATA_DIR [DOCUMENTS] [SESSIONS]
(defaults 60000 and 20). A DATA_DIR that does not exist is made and filled first (documents of
two sentences uploaded through the API, then the sessions); one that exists is measured as it
is, so one filled directory can be measured by two builds (copy it first: a newer build
migrates it). Figures: docs/BENCHMARKS.md, "Reading large sessions and analyses".
"""
import json, os, ssl, statistics, subprocess, sys, time, urllib.request

binary, port, data = sys.argv[1], sys.argv[2], sys.argv[3]
documents = int(sys.argv[4]) if len(sys.argv) > 4 else 60_000
sessions = int(sys.argv[5]) if len(sys.argv) > 5 else 20
fill = not os.path.exists(data)
env = dict(os.environ, LECTOR_LISTEN=f"127.0.0.1:{port}", LECTOR_DATA_DIR=data,
           LECTOR_PASSWORD_HASHING__MEMORY_KIB="64", LECTOR_PASSWORD_HASHING__ITERATIONS="1")
server = subprocess.Popen([binary, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
ctx = ssl._create_unverified_context()
base = f"https://127.0.0.1:{port}"
token = None


def call(method, path, body=None):
    req = urllib.request.Request(base + path, data=None if body is None else json.dumps(body).encode(), method=method)
    req.add_header("content-type", "application/json")
    if token:
        req.add_header("authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=3600) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def timed(method, path, body=None, runs=5):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        status, _ = call(method, path, body)
        times.append(time.perf_counter() - start)
        assert status in (200, 201), (path, status)
    return statistics.median(times)


for _ in range(200):
    try:
        call("GET", "/health")
        break
    except Exception:
        time.sleep(0.2)
account = {"email": "bench@example.org", "password": "password-123"}
if fill:
    call("POST", "/auth/register", account)
token = call("POST", "/auth/login", account)[1]["auth_token"]
if fill:
    project = call("POST", "/projects", {"name": "Big", "type": "CLASS"})[1]["id"]
    call("POST", f"/projects/{project}/upload-classes", [{"name": "spam"}])
    texts = [{"text": f"Document {i} says one thing. Then it says another."} for i in range(documents)]
    for start in range(0, documents, 20_000):
        status, group = call("POST", f"/projects/{project}/upload-documents", texts[start:start + 20_000])
        assert status == 202, group
        while call("GET", f"/projects/{project}/groups/{group['id']}")[1]["status"] == "PROCESSING":
            time.sleep(1)
    for i in range(sessions):
        status, answer = call("POST", f"/projects/{project}/annotations", {"name": f"Session {i}"})
        assert status == 201, answer
project = call("GET", "/projects")[1]
project = (project["items"] if isinstance(project, dict) else project)[0]["id"]
listed = call("GET", f"/projects/{project}/annotations")[1]
listed = listed["items"] if isinstance(listed, dict) else listed
session = listed[-1]["id"]
# The session's documents come inside the session; a document comes with its segments.
document = call("GET", f"/projects/{project}/annotations/{session}/documents?limit=1")[1]["documents"][0]["id"]
answer = call("GET", f"/projects/{project}/annotations/{session}/documents/{document}")[1]
segment = (answer.get("segments") or answer["document"]["segments"])[0]["id"]
at = f"/projects/{project}/annotations/{session}/documents/{document}/segments/{segment}"
print(f"{len(listed)} sessions of {listed[-1].get('document_count', '?')} documents")
print(f"list_labeling_sessions  {timed('GET', f'/projects/{project}/annotations'):.3f} s")
print(f"get_labeling_session    {timed('GET', f'/projects/{project}/annotations/{session}'):.3f} s")
print(f"mark_segment_annotated  {timed('POST', at + '/statuses', {'name': 'ANNOTATED'}):.3f} s")
print(f"add_segment_tag         {timed('POST', at + '/tags', {'class': 'spam'}, runs=1):.3f} s (one run: a second is a conflict)")
server.terminate()
server.wait()
