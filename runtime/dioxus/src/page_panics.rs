//! Page panics: a panic raised inside the page library's own code (Dioxus
//! reading what a page sent over its connection — a forged event, a query
//! answer nobody asked for) is reported in one line, without its message
//! and without a backtrace.
//!
//! Such a panic is contained already (it ends that page's task and its
//! connection), but the default report would print the message, which may
//! quote what the page sent, and with `RUST_BACKTRACE` set would capture
//! and symbolize a backtrace — tens of megabytes of resolver state — on a
//! request any page can repeat. Every other panic goes to the hook that was
//! installed before, unchanged.

use std::panic::PanicHookInfo;

/// Installs the page-panic report (see the module docs) in front of the
/// current panic hook. Call it once, early in `main`, in a server that
/// serves LiveView pages.
///
/// ```no_run
/// agent_surface_dioxus::contain_page_panics();
/// ```
pub fn contain_page_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info: &PanicHookInfo<'_>| {
        match info.location() {
            Some(location) if from_page_library(location.file()) => {
                eprintln!(
                    "a page sent what the page library could not read ({}:{}); that page's \
                     connection ended",
                    library_name(location.file()),
                    location.line()
                );
            }
            _ => previous(info),
        }
    }));
}

/// Whether `file` is the source of a released Dioxus crate (a dependency:
/// a path segment like `dioxus-liveview-0.7.10`), not the application's or
/// this binding's.
fn from_page_library(file: &str) -> bool {
    file.split(['/', '\\']).any(is_dioxus_release)
}

/// `dioxus-<name>-<version>`: a crate as a registry or vendor directory
/// names it.
fn is_dioxus_release(segment: &str) -> bool {
    segment.starts_with("dioxus")
        && segment
            .rsplit_once('-')
            .is_some_and(|(_, version)| version.starts_with(|c: char| c.is_ascii_digit()))
}

/// The crate a library source file belongs to (`dioxus-liveview-0.7.10`),
/// for the one-line report.
fn library_name(file: &str) -> &str {
    file.split(['/', '\\'])
        .find(|segment| is_dioxus_release(segment))
        .unwrap_or("dioxus")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_released_dioxus_crates_count_as_the_page_library() {
        for file in [
            "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/dioxus-liveview-0.7.10/src/events.rs",
            "C:\\cargo\\registry\\src\\x\\dioxus-core-0.7.1\\src\\runtime.rs",
            "/vendor/dioxus-html-0.7.0/src/events/mouse.rs",
        ] {
            assert!(from_page_library(file), "{file}");
        }
        for file in [
            "/work/app/runtime/dioxus/src/webmcp.rs",
            "src/web/routes.rs",
            "/root/.cargo/registry/src/index/tokio-1.54.1/src/runtime/task.rs",
            "/home/me/dioxus-app/src/main.rs",
        ] {
            assert!(!from_page_library(file), "{file}");
        }
        assert_eq!(
            library_name("/r/dioxus-liveview-0.7.10/src/pool.rs"),
            "dioxus-liveview-0.7.10"
        );
    }
}
