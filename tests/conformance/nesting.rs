//! Nested mounts and hostile destructors: a component whose destructor
//! drops other mount handles (a page owning its children's mounts) never
//! deadlocks the registry on unmount, `dispose()` or a duplicate replace,
//! and a panicking destructor neither escapes nor skips the version bump,
//! the events or the audit record (AS-LIFE-001, AS-LIFE-003).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use agent_surface::audit::AuditKind;
use agent_surface::events::SurfaceEvent;
use agent_surface::prelude::*;
use agent_surface::registry::{DuplicatePolicy, Mounted, RegistrationStatus, Registry};

/// A page that owns its children's mounts.
pub(crate) struct Page {
    children: Mutex<Vec<Mounted>>,
    panic_on_drop: bool,
}

/// Whether the page is shown.
#[agent_schema]
pub(crate) struct Shown {
    /// Always true.
    pub(crate) shown: bool,
}

/// A page of the application.
#[agent_component(type = "test.page")]
impl Page {
    /// Whether the page is shown.
    #[observation]
    fn read(&self) -> Shown {
        Shown { shown: true }
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        // Dropping the children's handles unmounts them: re-enters the registry.
        if let Ok(mut children) = self.children.lock() {
            children.clear();
        }
        if self.panic_on_drop {
            panic!("a page destructor panicked");
        }
    }
}

/// A child widget.
pub(crate) struct Widget {
    dropped: Arc<AtomicBool>,
}

/// A widget of the page.
#[agent_component(type = "test.widget")]
impl Widget {
    /// Whether the widget is shown.
    #[observation]
    fn read(&self) -> Shown {
        Shown { shown: true }
    }
}

impl Drop for Widget {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
    }
}

/// Runs `f` on its own thread; fails (instead of hanging the suite) when it
/// does not complete: the deadlock this file guards against.
fn completes<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the registry deadlocked on a nested unmount")
}

/// Mounts a page (owning two widgets' mounts) and returns its handle and
/// the widgets' drop flags. The registry holds the only `Arc<Page>`.
fn page(registry: &Registry, panic_on_drop: bool) -> (Mounted, Vec<Arc<AtomicBool>>) {
    let mut flags = Vec::new();
    let mut children = Vec::new();
    for instance in ["a", "b"] {
        let dropped = Arc::new(AtomicBool::new(false));
        flags.push(Arc::clone(&dropped));
        children.push(
            registry
                .mount_instance(Arc::new(Widget { dropped }), instance)
                .unwrap(),
        );
    }
    let page = Arc::new(Page {
        children: Mutex::new(children),
        panic_on_drop,
    });
    (registry.mount(page).unwrap(), flags)
}

fn live_types(registry: &Registry) -> Vec<String> {
    registry
        .snapshot(&SnapshotOptions::default())
        .components()
        .iter()
        .map(|c| c.component_type().to_string())
        .collect()
}

#[test]
fn as_life_001_unmounting_a_page_unmounts_its_children_without_deadlock() {
    let registry = Registry::builder().build();
    let (mounted, flags) = page(&registry, false);
    assert_eq!(live_types(&registry).len(), 3);
    let r = registry.clone();
    completes(move || drop(mounted));
    assert!(live_types(&r).is_empty(), "{:?}", live_types(&r));
    assert!(flags.iter().all(|f| f.load(Ordering::SeqCst)));
}

#[test]
fn as_life_001_dispose_with_nested_mounts_completes() {
    let registry = Registry::builder().build();
    let (mounted, flags) = page(&registry, false);
    let r = registry.clone();
    completes(move || r.dispose());
    assert!(registry.is_disposed());
    assert!(live_types(&registry).is_empty());
    assert!(flags.iter().all(|f| f.load(Ordering::SeqCst)));
    assert_eq!(mounted.status(), RegistrationStatus::Unregistered);
}

#[test]
fn as_life_003_replacing_a_page_that_owns_mounts_completes() {
    let registry = Registry::builder()
        .duplicate_instances(DuplicatePolicy::Replace)
        .build();
    let (first, flags) = page(&registry, false);
    let r = registry.clone();
    let (second, _) = completes(move || page(&r, false));
    assert_eq!(first.status(), RegistrationStatus::Unregistered);
    assert_eq!(second.status(), RegistrationStatus::Active);
    assert!(flags.iter().all(|f| f.load(Ordering::SeqCst)));
    // The replacement's own widgets were mounted before it replaced the
    // first page; the first page's widgets are gone.
    let mut types = live_types(&registry);
    types.sort();
    assert_eq!(types, ["test.page", "test.widget", "test.widget"]);
}

#[test]
fn as_life_001_a_panicking_destructor_neither_escapes_nor_skips_the_unmount() {
    let registry = Registry::builder().build();
    let events = Arc::new(Mutex::new(Vec::new()));
    let _subscription = registry.subscribe({
        let events = Arc::clone(&events);
        move |event: &SurfaceEvent| events.lock().unwrap().push(event.clone())
    });
    let (mounted, flags) = page(&registry, true);
    let id = mounted.registration_id().to_owned();
    let version = registry.version();
    let r = registry.clone();
    // Would panic through `drop` if the destructor were not contained.
    completes(move || drop(mounted));
    assert!(live_types(&r).is_empty());
    assert!(flags.iter().all(|f| f.load(Ordering::SeqCst)));
    assert!(registry.version() > version, "the version moved");
    let unregistered = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, SurfaceEvent::ComponentUnregistered { registration_id, .. } if **registration_id == *id))
        .count();
    assert_eq!(unregistered, 1, "the page's unregistration was announced");
    let audited = registry
        .audit_log()
        .iter()
        .filter(|e| {
            e.kind == AuditKind::Unregistration && e.registration_id.as_deref() == Some(&*id)
        })
        .count();
    assert_eq!(audited, 1, "the page's unregistration was audited");
}

#[test]
fn as_life_001_dropping_a_listener_that_owns_a_mount_unmounts_it() {
    let registry = Registry::builder().build();
    let dropped = Arc::new(AtomicBool::new(false));
    let widget = registry
        .mount(Arc::new(Widget {
            dropped: Arc::clone(&dropped),
        }))
        .unwrap();
    // Another listener keeps events flowing while the owner goes away.
    let seen = Arc::new(Mutex::new(0_usize));
    let _watcher = registry.subscribe({
        let seen = Arc::clone(&seen);
        move |_event: &SurfaceEvent| *seen.lock().unwrap() += 1
    });
    let holder = Mutex::new(Some(widget));
    let owner = registry.subscribe(move |_event: &SurfaceEvent| {
        let _ = holder.lock().map(|h| h.is_some());
    });
    completes(move || drop(owner));
    assert!(live_types(&registry).is_empty());
    assert!(dropped.load(Ordering::SeqCst));
    assert!(*seen.lock().unwrap() >= 1, "the unmount was announced");
    let r = registry.clone();
    completes(move || r.dispose());
}

/// A policy that owns a mount handle (and may panic when dropped).
struct Owning {
    child: Mutex<Option<Mounted>>,
    panic_on_drop: bool,
}

impl agent_surface::policy::Policy for Owning {
    fn name(&self) -> &str {
        "owning"
    }
}

impl Drop for Owning {
    fn drop(&mut self) {
        if let Ok(mut child) = self.child.lock() {
            child.take();
        }
        if self.panic_on_drop {
            panic!("a policy destructor panicked");
        }
    }
}

fn evicting_registry() -> Registry {
    let registry = Registry::builder()
        .limits(agent_surface::registry::Limits::default().tombstone_size(1))
        .build();
    registry.set_procedure_executor(Some(crate::procedures::FakeBackend::agreeing()
        as Arc<dyn agent_surface::procedure::ProcedureExecutor>));
    registry
}

/// Mounts a screen whose procedure reference's policy owns a widget's
/// mount, then unmounts the screen: its tombstone keeps the policy.
fn screen_owning_a_widget(registry: &Registry, panic_on_drop: bool) -> Arc<AtomicBool> {
    let dropped = Arc::new(AtomicBool::new(false));
    let widget = registry
        .mount(Arc::new(Widget {
            dropped: Arc::clone(&dropped),
        }))
        .unwrap();
    let screen = Arc::new(crate::procedures::Screen::default());
    let mounted = registry
        .mounting(Arc::clone(&screen))
        .procedure(crate::procedures::disable_ref(&screen).policy(Owning {
            child: Mutex::new(Some(widget)),
            panic_on_drop,
        }))
        .mount()
        .unwrap();
    drop(mounted);
    dropped
}

#[test]
fn as_life_001_evicting_a_tombstone_that_owns_a_mount_completes() {
    let registry = evicting_registry();
    let dropped = screen_owning_a_widget(&registry, false);
    let r = registry.clone();
    // The next unmount evicts the screen's tombstone, dropping its policy.
    completes(move || {
        let page = r
            .mount_instance(
                Arc::new(Page {
                    children: Mutex::new(Vec::new()),
                    panic_on_drop: false,
                }),
                "evictor",
            )
            .unwrap();
        drop(page);
    });
    assert!(dropped.load(Ordering::SeqCst), "the widget was unmounted");
    assert!(live_types(&registry).is_empty());
}

#[test]
fn as_life_001_a_panicking_tombstone_policy_never_escapes_an_unrelated_unmount() {
    let registry = evicting_registry();
    let _dropped = screen_owning_a_widget(&registry, true);
    let page = registry
        .mount_instance(
            Arc::new(Page {
                children: Mutex::new(Vec::new()),
                panic_on_drop: false,
            }),
            "evictor",
        )
        .unwrap();
    let version = registry.version();
    let r = registry.clone();
    completes(move || drop(page));
    assert!(r.version() > version, "the unrelated unmount still bumped");
}
