// A stand-in of Perfetto UI's message handler, on a loopback port of its own (another origin than the page that
// opens it). Perfetto UI itself cannot be reached from this machine. Its documented protocol (google/perfetto
// docs/visualization/deep-linking-to-perfetto-ui.md): the opener posts the string 'PING' until the UI answers
// 'PONG', then posts {perfetto: {buffer: ArrayBuffer, title, fileName}}. What the stand-in got is reported to its
// server (POST /got) and kept in `got`.
import http from 'node:http';

const PAGE = `<!doctype html><html><body><p id="state">Perfetto UI stand-in: waiting for a trace</p><script>
window.addEventListener('message', (e) => {
  if (e.data === 'PING') { e.source.postMessage('PONG', e.origin); return; }
  if (e.data && e.data.perfetto) {
    const p = e.data.perfetto;
    document.getElementById('state').textContent = 'Perfetto UI stand-in: got ' + p.fileName;
    fetch('/got', { method: 'POST', body: JSON.stringify({ bytes: p.buffer.byteLength, title: p.title, fileName: p.fileName, from: e.origin }) });
  }
});
</script></body></html>`;

/** Serve the stand-in on 127.0.0.1 (a random port): {url, got (what it was posted), close()}. */
export async function startPerfettoStandin() {
  const got = [];
  const server = http.createServer((req, res) => {
    if (req.method === 'POST' && req.url === '/got') {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        got.push(JSON.parse(body));
        res.end('ok');
      });
      return;
    }
    res.setHeader('Content-Type', 'text/html');
    res.end(PAGE);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, got, close: () => server.close() };
}
