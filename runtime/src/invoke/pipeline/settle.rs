//! Phase 10: the output checked and sized, the dedupe record finished, the
//! audit record written and the settled event emitted.

use std::sync::Arc;

use crate::util::time::Instant;
use serde_json::{Map, Value};

use crate::audit::{AuditEvent, AuditKind};
use crate::canonical::{Measure, measure};
use crate::contract::CheckedSchema;
use crate::error::{ErrorPayload, FailureReason};
use crate::invoke::InvocationResult;
use agent_surface_rules::Audit;

use super::{InFlight, Subject, Trace};

impl InFlight<'_> {
    /// Phase 10 (first half): validate and size-check the output.
    pub(super) fn check_output(
        &self,
        subject: &Subject,
        output: Option<Value>,
        trace: &mut Trace,
    ) -> Result<Option<Arc<Value>>, ErrorPayload> {
        let schema = subject.output_schema();
        let Some(output) = output else {
            // No output (an executor's `null`, or a component implemented
            // by hand returning none) is `null` to an output schema: a
            // schema that refuses it is not bypassed by returning nothing.
            if let Some(schema) = schema {
                self.validate_output(subject, schema, &Value::Null, trace)?;
            }
            return Ok(None);
        };
        // Checked iteratively before anything walks the output recursively
        // (the validator, serializers, the dedupe copy); outputs share the
        // input depth bound, as they are often sent back as inputs. The
        // same walk sizes it (stopping past the output limit).
        let limits = &self.services.limits();
        let max_depth = limits.max_input_depth;
        // A schema that bounds every valid value within the limits needs no
        // walk first when nobody needs the output's size (only a dedupe
        // record does): validation alone decides, and its recursion follows
        // the schema's bounded depth.
        if self.leadership.is_none()
            && let Some(schema) = schema
            && schema
                .validator()
                .extent()
                .is_some_and(|extent| extent.within(max_depth, limits.max_output_bytes))
        {
            return match self.validate_output(subject, schema, &output, trace) {
                Ok(()) => Ok(Some(Arc::new(output))),
                Err(error) => {
                    // Invalid, so of any depth (a procedure's executor or a
                    // component implemented by hand can return anything):
                    // dropped without recursion.
                    crate::invoke::bounds::dispose(output);
                    Err(error)
                }
            };
        }
        let measured = match measure(&output, max_depth, limits.max_output_bytes) {
            Measure::TooLarge if !crate::invoke::bounds::depth_within(&output, max_depth) => {
                Measure::TooDeep
            }
            measured => measured,
        };
        if measured == Measure::TooDeep {
            trace.operator = Some(format!(
                "output nests deeper than {max_depth} levels of arrays and objects"
            ));
            crate::invoke::bounds::dispose(output);
            return Err(ErrorPayload::execution_failed(FailureReason::OutputInvalid));
        }
        if let Some(schema) = schema {
            self.validate_output(subject, schema, &output, trace)?;
        }
        let Measure::Len(size) = measured else {
            trace.operator = Some(format!(
                "output is larger than {} bytes",
                limits.max_output_bytes
            ));
            return Err(ErrorPayload::execution_failed(
                FailureReason::OutputTooLarge,
            ));
        };
        trace.output_bytes = Some(size);
        Ok(Some(Arc::new(output)))
    }

    /// Phase 10: the output against its schema.
    fn validate_output(
        &self,
        subject: &Subject,
        schema: &CheckedSchema,
        output: &Value,
        trace: &mut Trace,
    ) -> Result<(), ErrorPayload> {
        let issues = schema.validator().validate(output);
        if issues.is_empty() {
            return Ok(());
        }
        let listed: Vec<String> = issues.iter().map(ToString::to_string).collect();
        trace.operator = Some(format!(
            "output does not match its schema: {}",
            listed.join("; ")
        ));
        if self.services.config().environment == crate::context::Environment::Development {
            tracing::error!(capability = %subject.capability().id(), issues = %listed.join("; "), "handler output does not match its schema");
        }
        Err(ErrorPayload::execution_failed(FailureReason::OutputInvalid))
    }

    /// Phase 10: the result, the audit record and the settled event.
    pub(super) fn settle(
        &mut self,
        outcome: Result<Option<Arc<Value>>, ErrorPayload>,
        trace: Trace,
    ) -> InvocationResult {
        self.settled = true;
        let (started, version_at_start) = (self.started, self.version_at_start);
        let inner = &self.services;
        let version = inner.version();
        let changed = version != version_at_start;
        let invocation_id = Arc::clone(&self.invocation_id);
        let result = match &self.resolved {
            // A contract's capability: the result borrows its id.
            Some((_, Subject::View { capability, .. })) => InvocationResult::of_contract(
                invocation_id,
                capability.id().as_str(),
                outcome,
                version,
                changed,
            ),
            _ => InvocationResult::new(
                invocation_id,
                Arc::clone(self.capability_id()),
                outcome,
                version,
                changed,
            ),
        };
        let ended = trace.finished.unwrap_or_else(Instant::now);
        // One reading of the time for the settlement: the dedupe window and
        // the audit record.
        let settled_ms = inner.ms_at(ended);
        // The dedupe record first: no host hook below can abandon it.
        if let Some(leadership) = self.leadership.take() {
            leadership.finish(
                self.services,
                crate::primitives::dedupe::KeyRef(self.consumer.key(), &self.invocation_id),
                &result,
                trace.output_bytes,
                settled_ms,
            );
        }
        let duration_ms = crate::util::millis::millis(ended - started);
        let code = result.error().map(ErrorPayload::code);
        let status = if result.is_ok() { "ok" } else { "error" };
        // Why it was refused, where the error says (`denied`, `queue-full`,
        // …): in the record and the event alike.
        let reason = result
            .error()
            .and_then(|error| error.detail("reason"))
            .and_then(Value::as_str);
        let level = self
            .resolved
            .as_ref()
            .map_or(Audit::Metadata, |(_, subject)| subject.capability().audit());
        if level != Audit::None {
            let mut event = AuditEvent::new(AuditKind::InvocationSettled, settled_ms);
            event.capability_id = Some(Arc::clone(self.capability_id()));
            event.registration_id = self
                .resolved
                .as_ref()
                .map(|(registration, _)| Arc::clone(registration.id()));
            event.invocation_id = Some(Arc::clone(&self.invocation_id));
            event.consumer_id = Some(Arc::clone(self.consumer.key()));
            event.status = Some(status);
            event.code = code;
            event.duration_ms = Some(duration_ms);
            event.queue_wait_ms = trace.queue_wait.map(crate::util::millis::millis);
            event.execution_ms = trace.execution.map(crate::util::millis::millis);
            let mut detail = trace.audit_annotations;
            if let Some(reason) = reason {
                detail.insert("reason".to_owned(), Value::from(reason));
            }
            if let Some(operator) = trace.operator {
                detail.insert("operator".to_owned(), Value::String(operator));
            }
            event.detail = (!detail.is_empty()).then_some(detail);
            if level == Audit::Full {
                event.payload =
                    Some(self.audit_payload(trace.effective_input.as_ref(), result.output()));
            }
            let sinks = self
                .resolved
                .as_ref()
                .and_then(|(registration, subject)| subject.chain(registration))
                .map(|chain| &*chain.audit_sinks);
            inner.record_with(event, sinks);
        }
        inner.dispatcher().emit_with(|| {
            [crate::events::SurfaceEvent::InvocationSettled {
                invocation_id: Arc::clone(&self.invocation_id),
                capability_id: Arc::clone(self.capability_id()),
                consumer_id: Arc::clone(self.consumer.key()),
                consumer_label: self.consumer.label_arc().cloned(),
                status,
                code,
                reason: reason.map(Arc::from),
                duration_ms,
            }]
        });
        result
    }

    /// Input and output for a `full` audit record: redacted, size-capped.
    pub(super) fn audit_payload(
        &self,
        input: Option<&Value>,
        output: Option<&Value>,
    ) -> Map<String, Value> {
        let config = &self.services.config();
        let cap = config.limits.max_audit_payload_bytes;
        let prepare = |value: &Value| -> Value {
            let value = match &config.redact {
                // A panicking redaction hook keeps nothing of the payload.
                Some(redact) => {
                    crate::util::contain::contained("audit redaction hook", || redact(value))
                        .unwrap_or_else(|| serde_json::json!({"redacted": "redaction-failed"}))
                }
                None => value.clone(),
            };
            // A redaction hook may return anything: a value too deep to walk
            // safely is dropped without recursion and kept as a marker.
            // One walk: its depth, then its exact size.
            match measure(&value, config.limits.max_input_depth, usize::MAX) {
                Measure::Len(size) if size <= cap => value,
                Measure::Len(size) => serde_json::json!({"truncated": true, "bytes": size}),
                Measure::TooDeep | Measure::TooLarge => {
                    crate::util::nesting::dispose(value);
                    serde_json::json!({"truncated": true, "reason": "too-deep"})
                }
            }
        };
        let mut payload = Map::new();
        if let Some(input) = input {
            payload.insert("input".to_owned(), prepare(input));
        }
        if let Some(output) = output {
            payload.insert("output".to_owned(), prepare(output));
        }
        payload
    }
}
