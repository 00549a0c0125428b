// The first step of every file import: the file sent with a way to cancel, then its preview as a
// table whose text column can be picked. Importing documents and starting an analysis share it
// whole; importing labeled data shares the preview table.
import { useRef, useState, type FormEvent, type RefObject } from "react";
import { postForm, type Schemas } from "../api/client";
import { guessColumn, headerFirstFor } from "../lib/columns";
import type { useAction } from "../lib/hooks";
import { Field, ScrollRegion } from "./ui";

export type Uploaded = Schemas["UploadedFileDto"];
type Action = ReturnType<typeof useAction>;

/** A file's name without its extension: the name a new group or analysis is offered. */
export const baseName = (fileName: string) => fileName.replace(/\.[^.]+$/, "");

/** The way out of a request in flight, shown while it runs. */
export function CancelButton({ busy, abort }: { busy: boolean; abort: RefObject<AbortController | null> }) {
  if (!busy) return null;
  return (
    <button type="button" className="secondary" onClick={() => abort.current?.abort()}>
      Cancel
    </button>
  );
}

/** A table file uploaded for its preview: where it went, what it is called, which column holds the text. */
export function useTableUpload(path: string, action: Action) {
  const fileInput = useRef<HTMLInputElement>(null);
  const abort = useRef<AbortController | null>(null);
  const [uploaded, setUploaded] = useState<Uploaded | null>(null);
  const [fileName, setFileName] = useState("");
  const [headerFirst, setHeaderFirst] = useState(true);
  const [column, setColumn] = useState<number | null>(null);
  const [name, setName] = useState("");
  const upload = (e: FormEvent) => {
    e.preventDefault();
    const file = fileInput.current?.files?.[0];
    if (!file) return;
    abort.current = new AbortController();
    void action.run(async () => {
      const form = new FormData();
      form.append("file", file);
      const answer = await postForm<Uploaded>(path, form, abort.current!.signal);
      const header = headerFirstFor(file.name);
      setUploaded(answer);
      setFileName(file.name);
      setName(baseName(file.name));
      setHeaderFirst(header);
      setColumn(guessColumn(answer.preview, header));
    });
  };
  return { fileInput, abort, uploaded, setUploaded, fileName, headerFirst, setHeaderFirst, column, setColumn, name, setName, upload };
}

export type TableUpload = ReturnType<typeof useTableUpload>;

/** The form that sends the file: its input, the send button and, while it is sent, Cancel. */
export function UploadForm({
  upload,
  busy,
  label,
  accept,
  buttonLabel = "Upload and preview",
}: {
  upload: TableUpload;
  busy: boolean;
  label: string;
  accept: string;
  buttonLabel?: string;
}) {
  return (
    <form onSubmit={upload.upload} className="inline-form">
      <Field label={label}>
        {(fid) => <input id={fid} ref={upload.fileInput} type="file" required accept={accept} onChange={() => upload.setUploaded(null)} />}
      </Field>
      <button type="submit" disabled={busy}>
        {buttonLabel}
      </button>
      <CancelButton busy={busy} abort={upload.abort} />
    </form>
  );
}

/** Whether the first row names the columns, and the column with the text, picked on the preview. */
export function ColumnPicker({ upload, preview }: { upload: TableUpload; preview: string[][] }) {
  const { headerFirst, setHeaderFirst, column, setColumn, fileName } = upload;
  return (
    <>
      <label className="check">
        <input
          type="checkbox"
          checked={headerFirst}
          onChange={(e) => {
            setHeaderFirst(e.target.checked);
            setColumn(guessColumn(preview, e.target.checked));
          }}
        />
        The first row holds the column names
      </label>
      <fieldset>
        <legend>Pick the column with the text</legend>
        <PreviewTable preview={preview} headerFirst={headerFirst} column={column} onPick={setColumn} caption={`Preview of ${fileName}`} />
      </fieldset>
    </>
  );
}

/** The preview of an uploaded file as a table whose columns can be picked. */
export function PreviewTable({
  preview,
  headerFirst,
  column,
  onPick,
  caption,
}: {
  preview: string[][];
  headerFirst: boolean;
  column: number | null;
  onPick?: (i: number) => void;
  caption: string;
}) {
  const width = Math.max(0, ...preview.map((r) => r.length));
  const head = headerFirst ? preview[0] ?? [] : Array.from({ length: width }, (_, i) => `Column ${i + 1}`);
  const rows = headerFirst ? preview.slice(1) : preview;
  return (
    <ScrollRegion label={caption}>
      <table className="preview">
        <caption>{caption}</caption>
        <thead>
          <tr>
            {Array.from({ length: width }, (_, i) => (
              <th key={i} scope="col" className={column === i ? "picked" : ""}>
                {onPick ? (
                  <label className="pick">
                    <input type="radio" name="column" checked={column === i} onChange={() => onPick(i)} />
                    <span dir="auto">{head[i] || `Column ${i + 1}`}</span>
                  </label>
                ) : (
                  <span dir="auto">{head[i] || `Column ${i + 1}`}</span>
                )}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.slice(0, 10).map((r, j) => (
            <tr key={j}>
              {Array.from({ length: width }, (_, i) => (
                <td key={i} className={column === i ? "picked" : ""} dir="auto">
                  {(r[i] ?? "").slice(0, 200)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollRegion>
  );
}
