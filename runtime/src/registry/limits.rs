//! The registry's limits: every size, count and timeout it enforces, with
//! the specification's defaults, set one by one with chainable setters.

use std::time::Duration;

/// Every limit of the registry, with the specification's defaults. Start
/// from [`Limits::default`] and change what you need; fields stay readable.
///
/// ```
/// use std::time::Duration;
/// use agent_surface::registry::{Limits, Registry};
///
/// let limits = Limits::default()
///     .action_timeout(Duration::from_secs(30))
///     .max_input_bytes(65_536);
/// assert_eq!(limits.action_queue_depth, 2);
/// let registry = Registry::builder().limits(limits).build();
/// # drop(registry);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Component descriptions, in characters (500).
    pub max_component_description: usize,
    /// Capability descriptions, in characters (300).
    pub max_capability_description: usize,
    /// Serialized agent-visible metadata, in bytes (2048).
    pub max_meta_bytes: usize,
    /// Serialized handler output, in bytes (32 768).
    pub max_output_bytes: usize,
    /// Serialized schema, in bytes (16 384).
    pub max_schema_bytes: usize,
    /// Schema nesting depth (8).
    pub max_schema_depth: usize,
    /// Observation timeout (5 s).
    pub observation_timeout: Duration,
    /// Action timeout (10 s).
    pub action_timeout: Duration,
    /// Procedure timeout (30 s).
    pub procedure_timeout: Duration,
    /// Waiting actions per queue beyond the running one (2).
    pub action_queue_depth: usize,
    /// Concurrent observations per consumer (8).
    pub max_concurrent_observations_per_consumer: usize,
    /// Concurrent observations overall (32).
    pub max_concurrent_observations_total: usize,
    /// Waiting observations per consumer (8).
    pub max_queued_observations_per_consumer: usize,
    /// Terminal results kept for deduplication (200).
    pub dedupe_cache_size: usize,
    /// How long deduplication remembers a result (10 min).
    pub dedupe_cache_ttl: Duration,
    /// Unmounted registrations remembered (100).
    pub tombstone_size: usize,
    /// How long an unmounted registration is remembered (5 min).
    pub tombstone_ttl: Duration,
    /// How long a confirmation waits for the user (120 s).
    pub confirmation_ttl: Duration,
    /// Confirmations pending at once (32).
    pub max_pending_confirmations: usize,
    /// Audit events kept by the default in-memory sink (1000).
    pub audit_buffer: usize,
    /// Largest input or output kept in a `full` audit record, in bytes (4096).
    pub max_audit_payload_bytes: usize,
    /// Longest agent-supplied identifier (invocation, capability, instance,
    /// registration, confirmation ids and the version hint), in bytes (256).
    /// Longer ones settle `INVALID_INPUT` before anything is remembered.
    pub max_id_bytes: usize,
    /// Largest agent input, serialized, in bytes (262 144).
    pub max_input_bytes: usize,
    /// Deepest nesting of agent input (arrays and objects), checked
    /// iteratively before any recursive walk (64). At most
    /// [`PARSE_DEPTH`](crate::adapter::bounds::PARSE_DEPTH) (128, what
    /// JSON text parses to): a registry built with more uses 128, so the
    /// walks that follow the check (validation, copies, drops) stay far
    /// within any thread's stack.
    pub max_input_depth: usize,
    /// Confirmations one consumer may have pending at once, under
    /// `max_pending_confirmations` (8), so one consumer cannot starve others.
    pub max_pending_confirmations_per_consumer: usize,
    /// Bytes of terminal results kept for deduplication, all consumers
    /// together (4 MiB). When full, the consumer holding the most gives up
    /// its oldest record first.
    pub dedupe_cache_bytes: usize,
    /// Calls one consumer may have in flight under an invocation id at once
    /// (64); more settle `RATE_LIMITED`. In-flight records are never evicted.
    pub max_in_flight_per_consumer: usize,
    /// With a [shared store](crate::store): the records (running and
    /// settled) one principal may hold in it at once (1,000), each at most
    /// `max_output_bytes` plus its envelope. At the bound the principal's
    /// own oldest settled record gives way (as in a replica's own window:
    /// never another principal's); when all are running calls, a new one
    /// settles `RATE_LIMITED` (`queue-full`).
    pub shared_records_per_principal: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_component_description: agent_surface_rules::MAX_COMPONENT_DESCRIPTION,
            max_capability_description: agent_surface_rules::MAX_CAPABILITY_DESCRIPTION,
            max_meta_bytes: agent_surface_rules::MAX_META_BYTES,
            max_output_bytes: 32_768,
            max_schema_bytes: 16_384,
            max_schema_depth: 8,
            observation_timeout: Duration::from_secs(5),
            action_timeout: Duration::from_secs(10),
            procedure_timeout: Duration::from_secs(30),
            action_queue_depth: 2,
            max_concurrent_observations_per_consumer: 8,
            max_concurrent_observations_total: 32,
            max_queued_observations_per_consumer: 8,
            dedupe_cache_size: 200,
            dedupe_cache_ttl: Duration::from_secs(600),
            tombstone_size: 100,
            tombstone_ttl: Duration::from_secs(300),
            confirmation_ttl: Duration::from_secs(120),
            max_pending_confirmations: 32,
            audit_buffer: 1000,
            max_audit_payload_bytes: 4096,
            max_id_bytes: 256,
            max_input_bytes: 262_144,
            max_input_depth: 64,
            max_pending_confirmations_per_consumer: 8,
            dedupe_cache_bytes: 4 << 20,
            max_in_flight_per_consumer: 64,
            shared_records_per_principal: 1_000,
        }
    }
}

impl Limits {
    /// The limits a registry uses: `max_input_depth` at most
    /// [`PARSE_DEPTH`](crate::adapter::bounds::PARSE_DEPTH).
    pub(crate) fn bounded(mut self) -> Limits {
        self.max_input_depth = self.max_input_depth.min(crate::util::nesting::PARSE_DEPTH);
        self
    }
}

/// A chainable setter per field, each documented as setting it.
macro_rules! setters {
    ($($field:ident: $ty:ty,)*) => {
        impl Limits {
            $(
                #[doc = concat!("Sets [`Limits::", stringify!($field), "`].")]
                #[must_use]
                pub const fn $field(mut self, value: $ty) -> Limits {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}

setters! {
        max_component_description: usize,
        max_capability_description: usize,
        max_meta_bytes: usize,
        max_output_bytes: usize,
        max_schema_bytes: usize,
        max_schema_depth: usize,
        observation_timeout: Duration,
        action_timeout: Duration,
        procedure_timeout: Duration,
        action_queue_depth: usize,
        max_concurrent_observations_per_consumer: usize,
        max_concurrent_observations_total: usize,
        max_queued_observations_per_consumer: usize,
        dedupe_cache_size: usize,
        dedupe_cache_ttl: Duration,
        tombstone_size: usize,
        tombstone_ttl: Duration,
        confirmation_ttl: Duration,
        max_pending_confirmations: usize,
        audit_buffer: usize,
        max_audit_payload_bytes: usize,
        max_id_bytes: usize,
        max_input_bytes: usize,
        max_input_depth: usize,
        max_pending_confirmations_per_consumer: usize,
        dedupe_cache_bytes: usize,
        max_in_flight_per_consumer: usize,
        shared_records_per_principal: usize,
}
