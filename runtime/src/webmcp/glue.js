// The page's side of the WebMCP adapter (agent_surface::webmcp): keeps
// document.modelContext's tools equal to the in-page agent's tools as the
// server sends them, and forwards each call (and its cancellation) to the
// server through `channel` ({ send(message), listen(handler) }: `listen`
// calls `handler` with each message the server sends). Nothing here decides
// what a call may do: the server's pipeline does.
function agentSurfaceWebMcp(channel) {
  var context = document.modelContext;
  if (!context || typeof context.registerTool !== "function") {
    channel.send({ type: "absent" });
    return;
  }
  // name -> { key, controller }: what is registered, and how to take it back.
  var registered = new Map();
  // call number -> { name, resolve }: calls waiting for the server.
  var waiting = new Map();
  var next = 1;
  // The result every call gets once the server ended the serving.
  var ended = null;

  function sameAs(entry) {
    return JSON.stringify([entry.description, entry.inputSchema, entry.annotations]);
  }

  function cancel(call) {
    if (waiting.has(call)) {
      channel.send({ type: "cancel", call: call });
    }
  }

  // Arguments larger than this as JSON (in bytes) are not sent.
  var maxArgumentBytes = Infinity;

  // The arguments as JSON text, made once: what is checked is what is
  // sent (a getter or a Proxy cannot answer one way to the checks and
  // another to the channel), and a value with no JSON form (a cycle, a
  // throwing `toJSON`, a function) never reaches a converter. `null` when
  // there is no JSON form.
  function asText(args) {
    try {
      var text = JSON.stringify(args);
      return typeof text === "string" ? text : null;
    } catch (error) {
      return null;
    }
  }

  function tooLarge(text) {
    if (maxArgumentBytes === Infinity) {
      return false;
    }
    // A UTF-16 unit is at most 3 bytes of UTF-8.
    if (text.length * 3 <= maxArgumentBytes) {
      return false;
    }
    return new TextEncoder().encode(text).length > maxArgumentBytes;
  }

  // The value `text` says, or `null` when it cannot be read back.
  function fromText(text) {
    try {
      return { value: JSON.parse(text) };
    } catch (error) {
      return null;
    }
  }

  // Arguments nesting more arrays and objects than this are not sent: no
  // converter on the way (JSON text, a wasm binding's) walks them, and the
  // pipeline refuses them anyway.
  var maxArgumentDepth = 64;

  // Whether `args` nests deeper than maxArgumentDepth. Iterative, so a
  // value of any depth (or a cycle) is safe to measure.
  function tooDeep(args) {
    try {
      var stack = [[args, 1]];
      while (stack.length > 0) {
        var top = stack.pop();
        var value = top[0];
        if (value === null || typeof value !== "object") {
          continue;
        }
        if (top[1] > maxArgumentDepth) {
          return true;
        }
        var children = Array.isArray(value) ? value : Object.values(value);
        for (var i = 0; i < children.length; i++) {
          if (children[i] !== null && typeof children[i] === "object") {
            stack.push([children[i], top[1] + 1]);
          }
        }
      }
    } catch (error) {
      return true;
    }
    return false;
  }

  function executor(name) {
    return function (args, client) {
      if (ended) {
        return Promise.resolve(ended);
      }
      var call = next++;
      return new Promise(function (resolve) {
        var signal = client && client.signal;
        // A call with its own signal is cancelled by it alone: the
        // browser's `toolcancel` names only the tool, and would take
        // every other call of the same tool with it.
        waiting.set(call, { name: name, resolve: resolve, own: !!signal });
        if (signal) {
          if (signal.aborted) {
            cancel(call);
          } else {
            signal.addEventListener("abort", function () { cancel(call); }, { once: true });
          }
        }
        var text = asText(args === undefined ? {} : args);
        if (text !== null && tooLarge(text)) {
          // Only the call goes: the server refuses it as the pipeline
          // refuses a large input, and the page's connection stays small.
          channel.send({ type: "call", call: call, name: name, tooLarge: true });
          return;
        }
        var copy = text === null ? null : fromText(text);
        if (copy === null || tooDeep(copy.value)) {
          // Too deep, or no JSON form: refused as a too-deep input, the
          // call answered all the same.
          channel.send({ type: "call", call: call, name: name, tooDeep: true });
        } else {
          channel.send({ type: "call", call: call, name: name, arguments: copy.value });
        }
      });
    };
  }

  function sync(tools) {
    var wanted = new Map();
    for (var i = 0; i < tools.length; i++) {
      wanted.set(tools[i].name, tools[i]);
    }
    registered.forEach(function (held, name) {
      var entry = wanted.get(name);
      if (!entry || sameAs(entry) !== held.key) {
        held.controller.abort();
        registered.delete(name);
      }
    });
    wanted.forEach(function (entry, name) {
      if (registered.has(name)) {
        return;
      }
      var controller = new AbortController();
      var held = { key: sameAs(entry), controller: controller };
      registered.set(name, held);
      var tool = {
        name: entry.name,
        description: entry.description,
        inputSchema: entry.inputSchema,
        annotations: entry.annotations,
        execute: executor(entry.name)
      };
      Promise.resolve()
        .then(function () { return context.registerTool(tool, { signal: controller.signal }); })
        .catch(function () {
          if (registered.get(name) === held) {
            registered.delete(name);
          }
        });
    });
  }

  context.addEventListener("toolcancel", function (event) {
    waiting.forEach(function (call, number) {
      if (call.name === event.toolName && !call.own) {
        cancel(number);
      }
    });
  });

  window.addEventListener("pagehide", function () {
    registered.forEach(function (held) { held.controller.abort(); });
    registered.clear();
  });

  channel.listen(function (message) {
    if (!message || typeof message !== "object") {
      return;
    }
    if (ended) {
      return;
    }
    if (message.type === "tools" && typeof message.maxArgumentBytes === "number") {
      maxArgumentBytes = message.maxArgumentBytes;
    }
    if (message.type === "tools" && typeof message.maxArgumentDepth === "number") {
      maxArgumentDepth = message.maxArgumentDepth;
    }
    if (message.type === "tools" && Array.isArray(message.tools)) {
      sync(message.tools);
    } else if (message.type === "end") {
      // The server stopped serving this page: nothing it still runs will
      // answer, so every waiting call settles with the result it sent.
      ended = message.result && typeof message.result === "object"
        ? message.result
        : { content: [{ type: "text", text: "ended" }], isError: true };
      sync([]);
      var calls = waiting;
      waiting = new Map();
      calls.forEach(function (call) { call.resolve(ended); });
    } else if (message.type === "result") {
      var call = waiting.get(message.call);
      if (call) {
        waiting.delete(message.call);
        call.resolve(message.result);
      }
    }
  });
  channel.send({ type: "ready" });
}
