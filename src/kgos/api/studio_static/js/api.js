// The JSON API of this same server. A 401 asks for the bearer token (once per tab: kept in
// sessionStorage) and retries; every other error becomes an ApiError carrying the API's
// {"detail", "error"} message, which the views show as text.

const TOKEN_KEY = "kgos-token";

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.detail || `HTTP ${status}`);
    this.status = status;
    this.body = body || {};
    this.kind = this.body.error || "";
  }
}

function headers(extra = {}) {
  const out = { "X-KGOS-Client": "studio", ...extra };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) out.Authorization = `Bearer ${token}`;
  return out;
}

// One dialog at a time: a view that loads several endpoints gets several 401s at once, and each
// of them waits for the same answer instead of opening its own dialog.
let pendingToken = null;

function askToken(previous) {
  if (!pendingToken) {
    pendingToken = import("./token.js")
      .then(({ askForToken }) => askForToken(previous))
      .then((token) => { sessionStorage.setItem(TOKEN_KEY, token); })
      .finally(() => { pendingToken = null; });
  }
  return pendingToken;
}

async function parse(response) {
  const type = response.headers.get("content-type") || "";
  if (type.includes("application/json")) return response.json();
  return { detail: (await response.text()).slice(0, 300) || response.statusText };
}

/** fetch ``path`` (relative to the page) and return the raw Response, asking for a token on 401. */
export async function raw(path, options = {}) {
  for (let attempt = 0; ; attempt++) {
    let response;
    try {
      response = await fetch(path, { ...options, headers: headers(options.headers) });
    } catch (err) {
      throw new ApiError(0, { detail: `the server did not answer (${err.message}): is 'kgos serve' still running?`, error: "Offline" });
    }
    if (response.status === 401 && attempt < 3) {
      await askToken(sessionStorage.getItem(TOKEN_KEY));
      continue;
    }
    if (!response.ok) throw new ApiError(response.status, await parse(response));
    return response;
  }
}

export async function get(path, params) {
  const query = params ? `?${new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== ""))}` : "";
  return (await raw(`api/${path}${query}`)).json();
}

export async function send(method, path, body) {
  const response = await raw(`api/${path}`, { method, headers: { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body) });
  return response.json();
}

export const post = (path, body) => send("POST", path, body ?? {});

/** POST a multipart form with upload progress (fetch has none): resolves to the JSON answer. */
export function upload(path, form, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `api/${path}`);
    for (const [k, v] of Object.entries(headers())) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total);
    xhr.onerror = () => reject(new ApiError(0, { detail: "the upload was cut off: is the server still running?", error: "Offline" }));
    xhr.onload = () => {
      let body;
      try { body = JSON.parse(xhr.responseText); } catch { body = { detail: xhr.responseText.slice(0, 300) }; }
      if (xhr.status >= 200 && xhr.status < 300) resolve(body);
      else reject(new ApiError(xhr.status, body));
    };
    xhr.send(form);
  });
}

/** Read a server-sent-event stream (POST with a JSON body), calling onEvent(obj) per event. */
export async function stream(path, body, onEvent) {
  const response = await raw(`api/${path}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const data = frame.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
        if (data) onEvent(JSON.parse(data));
      }
    }
  } catch (err) {
    throw new ApiError(0, { detail: `the connection broke mid-answer (${err.message}): the server stopped or restarted; ask again`, error: "StreamInterrupted" });
  }
}

/** Download ``path`` (with the token, which a plain link could not send) as a file: the server's
 * Content-Disposition name, else ``fallback``. */
export async function download(path, fallback) {
  const response = await raw(path);
  const url = URL.createObjectURL(await response.blob());
  const a = document.createElement("a");
  a.href = url;
  a.download = (response.headers.get("content-disposition") || "").match(/filename="?([^";]+)/)?.[1] || fallback;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}
