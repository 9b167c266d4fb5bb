// The spmd extension's Language Server client: starts `spmdc lsp` for .spmd
// files (docs/lsp.md). Needs `npm install` in the extension's folder (for
// vscode-languageclient); without it, highlighting still works and a message
// says how to get the server.
const vscode = require('vscode');

let client;

function activate(context) {
  let LanguageClient;
  try {
    ({ LanguageClient } = require('vscode-languageclient/node'));
  } catch (e) {
    vscode.window.showInformationMessage(
      'spmd: run `npm install` in the extension folder to use the spmdc language server');
    return;
  }
  const command = vscode.workspace.getConfiguration('spmd').get('serverPath', 'spmdc');
  const server = { command, args: ['lsp'] };
  client = new LanguageClient('spmd', 'spmdc language server', server, {
    documentSelector: [{ language: 'spmd' }],
  });
  client.start();
  context.subscriptions.push({ dispose: () => client && client.stop() });
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
