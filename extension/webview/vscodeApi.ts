/** The webview's side of the message channel, typed by the unions of shared/messages.ts. */

interface VsCodeApi<State> {
  postMessage(message: unknown): void;
  getState(): State | undefined;
  setState(state: State): void;
}

declare function acquireVsCodeApi<State>(): VsCodeApi<State>;

export interface Channel<Out, State> {
  post(message: Out): void;
  state(): State | undefined;
  save(state: State): void;
}

/** Call once per page (VS Code allows one acquisition). */
export function channel<Out, State>(): Channel<Out, State> {
  const api = acquireVsCodeApi<State>();
  return {
    post: (message) => api.postMessage(message),
    state: () => api.getState(),
    save: (state) => api.setState(state),
  };
}
