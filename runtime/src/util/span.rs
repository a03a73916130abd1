//! Spans that cost nothing when nobody collects them.
//!
//! A disabled `tracing` span is cheap, except when `tracing`'s `log`
//! feature is on (axum's default features turn it on, through tower): then,
//! until a `tracing` subscriber is set, every disabled span still records
//! its fields and each enter and exit for the `log` crate, a few hundred
//! instructions per call of the pipeline. The pipeline's spans are for
//! `tracing` subscribers, so without one they are not made at all.

/// `tracing::span!`, or `Span::none()` when no `tracing` subscriber wants
/// spans of its level (none is set: the max level is then `OFF`).
macro_rules! wanted_span {
    ($level:expr, $($span:tt)*) => {
        if ::tracing::level_filters::LevelFilter::current() >= $level {
            ::tracing::span!($level, $($span)*)
        } else {
            ::tracing::Span::none()
        }
    };
}

/// The span of one pipeline phase (`phase`, its number and name), at
/// `TRACE`: made only when a subscriber wants it.
macro_rules! phase_span {
    ($n:literal, $name:literal) => {
        $crate::util::span::wanted_span!(::tracing::Level::TRACE, "phase", n = $n, name = $name)
    };
}

pub(crate) use {phase_span, wanted_span};
