// A stand-in for the Jupyter extension (ms-toolsai.jupyter), which cannot be installed here (no marketplace):
// only the surface OpLens uses, as its published typings document it (@vscode/jupyter-extension 1.1.1,
// api.d.ts, "Kernels API"):
//   exports.kernels.getKernel(uri): Thenable<Kernel | undefined>   (undefined: no kernel started for that notebook)
//   Kernel.status, Kernel.language
//   Kernel.executeCode(code, token): AsyncIterable<Output>, Output = { items: [{ mime, data: Uint8Array }] };
//   stdout/stderr as VS Code's NotebookCellOutputItem.stdout/stderr mimes, an error as
//   `application/vnd.code.notebook.error` ({name, message, stack}); cancelling the token interrupts the kernel.
// The kernel is real: the ipykernel e2e/run_notebook.py --keep-alive started for the notebook (the user's "run a
// cell" starts it), its connection file named in `<notebook>.kernel.json` beside it; each execution goes through
// e2e/kernel_exec.py (jupyter_client), one JSON line per output.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');

const STDOUT = 'application/vnd.code.notebook.stdout';
const STDERR = 'application/vnd.code.notebook.stderr';
const ERROR = 'application/vnd.code.notebook.error';

function activate() {
  const python = process.env.OPLENS_E2E_PYTHON_FOR_STANDIN || 'python3';
  const exec = process.env.OPLENS_E2E_KERNEL_EXEC;
  return {
    kernels: {
      async getKernel(uri) {
        const marker = `${uri.fsPath}.kernel.json`;
        if (!exec || !fs.existsSync(marker)) return undefined; // no kernel started for this notebook
        const { connection_file: connection } = JSON.parse(fs.readFileSync(marker, 'utf8'));
        return {
          status: 'idle',
          language: 'python',
          async *executeCode(code, token) {
            const child = spawn(python, [exec, connection], { stdio: ['pipe', 'pipe', 'inherit'] });
            child.stdin.end(code);
            const cancel = token.onCancellationRequested(() => child.kill('SIGINT')); // kernel_exec interrupts the kernel
            try {
              for await (const line of readline.createInterface({ input: child.stdout })) {
                if (!line.trim()) continue;
                const out = JSON.parse(line);
                const mime = { stdout: STDOUT, stderr: STDERR, error: ERROR }[out.kind] ?? out.mime;
                yield { items: [{ mime, data: new TextEncoder().encode(out.text) }] };
              }
            } finally {
              cancel.dispose();
            }
          },
        };
      },
    },
  };
}

module.exports = { activate, deactivate() {} };
