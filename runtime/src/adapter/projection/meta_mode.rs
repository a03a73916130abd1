//! Meta mode: the three constant verbs (`surface_discover`, `surface_read`,
//! `surface_act`), their envelopes, the scope a model may narrow, and the
//! verb hint for a target of the wrong kind.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::Toolset;
use super::tool::{MetaTool, Source, Tool, ToolState};
use crate::canonical::{Sink, write_canonical};
use crate::error::ErrorPayload;
use crate::invoke::{Invocation, InvocationResult, Kinds};
use crate::schema::Issue;
use crate::schema::{Issues, key_pointer};
use crate::snapshot::{SnapshotOptions, in_scope};

// ---------------------------------------------------------------------------
// Meta mode

/// The discover verb.
pub const DISCOVER: &str = "surface_discover";
/// The read verb.
pub const READ: &str = "surface_read";
/// The act verb.
pub const ACT: &str = "surface_act";

fn meta_definitions() -> &'static [MetaTool; 3] {
    static DEFINITIONS: std::sync::OnceLock<[MetaTool; 3]> = std::sync::OnceLock::new();
    DEFINITIONS.get_or_init(|| {
        [
            MetaTool {
                name: DISCOVER,
                description: "List what you can observe and do in the application now: components with their observations and actions, and backend procedures, each with its input schema and availability. Call it first, and again when a result says surfaceChanged.",
                schema: json!({
                    "type": "object",
                    "properties": {
                        "scope": {
                            "type": "array",
                            "items": {"type": "string"},
                            "description": "Component-type prefixes to narrow the listing to, e.g. [\"devices.table\"]."
                        }
                    },
                    "additionalProperties": false
                }),
            },
            MetaTool {
                name: READ,
                description: "Read an observation listed by surface_discover. Returns its current value.",
                schema: json!({
                    "type": "object",
                    "properties": {
                        "capabilityId": {"type": "string", "description": "The observation's capabilityId, e.g. view:devices.table.readState."},
                        "instanceId": {"type": "string", "description": "The instance, when several are listed."}
                    },
                    "required": ["capabilityId"],
                    "additionalProperties": false
                }),
            },
            MetaTool {
                name: ACT,
                description: "Run an action or backend procedure listed by surface_discover with an input matching its inputSchema. Follow the result's retry hint; after CONFIRMATION_REQUIRED, retry with the confirmationId once the user approved.",
                schema: json!({
                    "type": "object",
                    "properties": {
                        "capabilityId": {"type": "string", "description": "The action's capabilityId or the procedure's procedureId."},
                        "instanceId": {"type": "string", "description": "The instance, when several are listed."},
                        "registrationId": {"type": "string", "description": "The registrationId from surface_discover."},
                        "input": {"type": "object", "description": "The input, matching the target's inputSchema."},
                        "invocationId": {"type": "string", "description": "Reuse it only to retry the same call."},
                        "confirmationId": {"type": "string", "description": "Evidence from an approved confirmation."},
                        "surfaceVersion": {"type": "string", "description": "The surfaceVersion from surface_discover."}
                    },
                    "required": ["capabilityId"],
                    "additionalProperties": false
                }),
            },
        ]
    })
}

pub(in crate::adapter) fn meta_tools() -> &'static Arc<Vec<Tool>> {
    static TOOLS: std::sync::OnceLock<Arc<Vec<Tool>>> = std::sync::OnceLock::new();
    TOOLS.get_or_init(|| {
        Arc::new(
            meta_definitions()
                .iter()
                .map(|meta| Tool {
                    source: Source::Meta(meta),
                    renamed: None,
                    state: ToolState {
                        available: true,
                        unavailable_reason: None,
                        note: None,
                    },
                    surface_version: 0,
                })
                .collect(),
        )
    })
}

/// An envelope's fields after validation.
struct Envelope(Map<String, Value>);

impl Envelope {
    /// Checks the top-level keys and their types: unknown or mistyped keys
    /// and missing required ones are `INVALID_INPUT` naming them, capped,
    /// truncated and cleaned as the validator's issues are.
    fn check(
        input: Value,
        strings: &[&str],
        required: &[&str],
        other: &[&str],
    ) -> Result<Envelope, ErrorPayload> {
        let map = match input {
            Value::Null => Map::new(),
            Value::Object(map) => map,
            _ => {
                return Err(ErrorPayload::invalid_input(&[Issue::new(
                    "",
                    "the arguments must be a JSON object",
                )]));
            }
        };
        let mut issues = Issues::default();
        let mut allowed: Vec<&str> = strings.iter().chain(other).copied().collect();
        allowed.sort_unstable();
        let unknown = format!("unknown key; the keys are: {}", allowed.join(", "));
        // Missing keys first: they stay listed however many unknown ones follow.
        for key in required {
            if !map.contains_key(*key) {
                issues.push_issue(Issue::new(key_pointer(key), "is required"));
            }
        }
        for (key, value) in &map {
            if strings.contains(&key.as_str()) {
                if !value.is_string() {
                    issues.push_issue(Issue::new(key_pointer(key), "must be a string"));
                }
            } else if !other.contains(&key.as_str()) {
                issues.push_issue(Issue::new(key_pointer(key), unknown.clone()));
            }
        }
        if issues.is_empty() {
            Ok(Envelope(map))
        } else {
            Err(ErrorPayload::invalid_input(&issues.finish()))
        }
    }

    fn string(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }
}

/// A model-supplied scope intersected with the configured floor.
struct Scoped {
    prefixes: Vec<String>,
    rejected: Vec<String>,
    empty: bool,
}

/// The most prefixes a model may request in `surface_discover`'s `scope`.
const MAX_SCOPE_PREFIXES: usize = 32;

fn narrow(floor: &[String], requested: Option<Vec<String>>) -> Scoped {
    let Some(requested) = requested else {
        return Scoped {
            prefixes: floor.to_vec(),
            rejected: Vec::new(),
            empty: false,
        };
    };
    if requested.is_empty() {
        return Scoped {
            prefixes: floor.to_vec(),
            rejected: Vec::new(),
            empty: false,
        };
    }
    if floor.is_empty() {
        return Scoped {
            prefixes: requested,
            rejected: Vec::new(),
            empty: false,
        };
    }
    let mut prefixes = Vec::new();
    let mut rejected = Vec::new();
    for prefix in requested {
        if in_scope(&prefix, floor) {
            // Within the floor: narrows it.
            prefixes.push(prefix);
            continue;
        }
        // Wider than some floor prefixes: only those stay.
        let inner: Vec<&String> = floor
            .iter()
            .filter(|f| in_scope(f, std::slice::from_ref(&prefix)))
            .collect();
        if inner.is_empty() {
            rejected.push(prefix);
        } else {
            prefixes.extend(inner.into_iter().cloned());
        }
    }
    prefixes.sort();
    prefixes.dedup();
    let empty = prefixes.is_empty();
    Scoped {
        prefixes,
        rejected,
        empty,
    }
}

impl Toolset {
    fn ok(&self, name: &str, tool_call_id: Option<&str>, output: Value) -> InvocationResult {
        self.shared
            .settled(name, tool_call_id, Ok(Some(Arc::new(output))))
    }

    pub(in crate::adapter) fn discover(
        &self,
        input: Value,
        tool_call_id: Option<&str>,
    ) -> InvocationResult {
        let shared = &self.shared;
        let envelope = match Envelope::check(input, &[], &[], &["scope"]) {
            Ok(envelope) => envelope,
            Err(error) => return shared.immediate(DISCOVER, tool_call_id, error),
        };
        let not_strings = || {
            let issue = Issue::new("/scope", "must be an array of strings");
            shared.immediate(
                DISCOVER,
                tool_call_id,
                ErrorPayload::invalid_input(&[issue]),
            )
        };
        let requested = match envelope.0.get("scope") {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => {
                let strings: Option<Vec<String>> = items
                    .iter()
                    .map(|item| item.as_str().map(str::to_owned))
                    .collect();
                let Some(strings) = strings else {
                    return not_strings();
                };
                // Bounded: the rejected prefixes are echoed back.
                let max_bytes = shared.registry.limits().max_id_bytes;
                let issue = if strings.len() > MAX_SCOPE_PREFIXES {
                    Some(Issue::new(
                        "/scope",
                        format!("must list at most {MAX_SCOPE_PREFIXES} prefixes"),
                    ))
                } else {
                    strings.iter().position(|p| p.len() > max_bytes).map(|at| {
                        Issue::new(
                            format!("/scope/{at}"),
                            format!("must be at most {max_bytes} bytes long"),
                        )
                    })
                };
                if let Some(issue) = issue {
                    return shared.immediate(
                        DISCOVER,
                        tool_call_id,
                        ErrorPayload::invalid_input(&[issue]),
                    );
                }
                Some(strings)
            }
            Some(_) => return not_strings(),
        };
        let scoped = narrow(&shared.options.scope, requested);
        let mut output = if scoped.empty {
            json!({
                "surfaceId": shared.registry.surface_id(),
                "surfaceVersion": shared.registry.version().to_string(),
                "capturedAt": crate::clock::rfc3339(shared.registry.now_ms()),
                "components": [],
                "procedures": [],
            })
        } else {
            let options = SnapshotOptions {
                consumer: shared.options.consumer.clone(),
                scope: scoped.prefixes,
                include_unavailable: true,
                budget: shared.budget,
            };
            shared.registry.snapshot(&options).to_json()
        };
        if !scoped.rejected.is_empty()
            && let Value::Object(map) = &mut output
        {
            map.insert(
                "scopeRejected".to_owned(),
                json!({"prefixes": scoped.rejected}),
            );
        }
        self.ok(DISCOVER, tool_call_id, output)
    }

    pub(in crate::adapter) async fn read(
        &self,
        input: Value,
        tool_call_id: Option<&str>,
        cancellation: Option<CancellationToken>,
    ) -> InvocationResult {
        let shared = &self.shared;
        let envelope = match Envelope::check(
            input,
            &["capabilityId", "instanceId"],
            &["capabilityId"],
            &[],
        ) {
            Ok(envelope) => envelope,
            Err(error) => return shared.immediate(READ, tool_call_id, error),
        };
        let mut request = Invocation::new(envelope.string("capabilityId").unwrap_or_default());
        if let Some(instance) = envelope.string("instanceId") {
            request = request.instance(instance);
        }
        request.registration_id = self.known_registration(&request);
        request.invocation_id = tool_call_id.map(str::to_owned);
        shared.run(request, Kinds::Observations, cancellation).await
    }

    pub(in crate::adapter) async fn act(
        &self,
        input: Value,
        tool_call_id: Option<&str>,
        cancellation: Option<CancellationToken>,
    ) -> InvocationResult {
        let shared = &self.shared;
        let strings = [
            "capabilityId",
            "instanceId",
            "registrationId",
            "invocationId",
            "confirmationId",
            "surfaceVersion",
        ];
        let mut envelope = match Envelope::check(input, &strings, &["capabilityId"], &["input"]) {
            Ok(envelope) => envelope,
            Err(error) => return shared.immediate(ACT, tool_call_id, error),
        };
        let capability_id = envelope
            .string("capabilityId")
            .unwrap_or_default()
            .to_owned();
        let mut payload = envelope.0.remove("input").unwrap_or(Value::Null);
        // Some models send the input object JSON-encoded: repaired only when
        // the target's schema is an object (every action and procedure
        // input is), so a string the target declares stays a string.
        if let Value::String(text) = &payload
            && self.takes_object(&capability_id)
            && let Ok(parsed @ Value::Object(_)) = serde_json::from_str::<Value>(text)
        {
            payload = parsed;
        }
        let mut request = Invocation::new(capability_id).input(payload);
        if let Some(instance) = envelope.string("instanceId") {
            request = request.instance(instance);
        }
        request.registration_id = envelope
            .string("registrationId")
            .map(str::to_owned)
            .or_else(|| self.known_registration(&request));
        request.surface_version = envelope.string("surfaceVersion").map(str::to_owned);
        request.confirmation_id = envelope.string("confirmationId").map(str::to_owned);
        request.invocation_id = envelope
            .string("invocationId")
            .or(tool_call_id)
            .map(str::to_owned);
        shared.run(request, Kinds::Operations, cancellation).await
    }

    /// Whether the target's input schema is an object schema (true for
    /// every action and procedure; observations take none).
    fn takes_object(&self, capability_id: &str) -> bool {
        capability_id.starts_with("view:") || capability_id.starts_with("domain:")
    }

    /// The registration of `(capability, instance)` in this consumer's
    /// current surface, when exactly one matches: meta calls carry the same
    /// staleness token as direct ones.
    fn known_registration(&self, request: &Invocation) -> Option<String> {
        let catalog = self.shared.catalog();
        let mut matches = catalog.tools.iter().filter_map(|tool| {
            let target = tool.target()?;
            (target.capability_id == request.capability_id.as_str()
                && request
                    .instance_id
                    .as_deref()
                    .is_none_or(|i| target.instance_id == i))
            .then(|| target.registration_id.to_owned())
        });
        match (matches.next(), matches.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        }
    }
}

/// The size of the meta-mode tool block in canonical JSON bytes.
pub fn meta_block_size() -> usize {
    struct Count(usize);
    impl Sink for Count {
        fn write(&mut self, bytes: &[u8]) {
            self.0 += bytes.len();
        }
    }
    let mut count = Count(0);
    for tool in meta_tools().iter() {
        write_canonical(&tool.definition(), &mut count);
    }
    count.0
}
