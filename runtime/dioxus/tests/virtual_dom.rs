//! The Dioxus binding on a headless `VirtualDom` (no browser): mounts follow
//! rendering, re-renders push availability, list items mount under instance
//! ids from data, and the pending-confirmations hook renders and answers
//! the requests an agent's calls wait for.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_surface::events::SurfaceEvent;
use agent_surface::prelude::*;
use agent_surface::registry::RegistrationStatus;
use agent_surface_dioxus::{
    AgentHandle, AgentMountError, use_agent_component, use_agent_instance,
    use_pending_confirmations, use_surface_revision,
};
use dioxus::dioxus_core::{ScopeId, VirtualDom};
use dioxus::prelude::*;
use serde_json::json;

/// The application state the agent's handlers and the UI share.
#[derive(Debug, Default)]
struct Store {
    selected: Mutex<Vec<String>>,
    deletes: AtomicUsize,
}

impl Store {
    fn selected(&self) -> Vec<String> {
        self.selected.lock().map(|s| s.clone()).unwrap_or_default()
    }

    fn select(&self, ids: &[&str]) {
        if let Ok(mut selected) = self.selected.lock() {
            *selected = ids.iter().map(|id| (*id).to_owned()).collect();
        }
    }
}

/// The table's agent face.
#[derive(Debug)]
struct Table(Arc<Store>);

/// A table whose selection can be deleted.
#[agent_component(type = "test.table")]
impl Table {
    /// The selected ids.
    #[observation]
    fn selection(&self) -> Vec<String> {
        self.0.selected()
    }

    /// Delete the selected rows.
    #[action(effect = "local-state", confirmation = "required", when = has_selection, unavailable_reason = "Select a row first")]
    fn delete(&self) -> u32 {
        self.0.deletes.fetch_add(1, Ordering::SeqCst);
        u32::try_from(self.0.selected().len()).unwrap_or(u32::MAX)
    }

    fn has_selection(&self) -> bool {
        !self.0.selected().is_empty()
    }
}

/// One row's agent face.
#[derive(Debug)]
struct RowFace {
    id: String,
    reads: Arc<AtomicUsize>,
}

/// One row of the table.
#[agent_component(type = "test.row")]
impl RowFace {
    /// The row's id.
    #[observation]
    fn id(&self) -> String {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.id.clone()
    }
}

/// What the test changes between renders (the root context).
#[derive(Clone, Default)]
struct Model(Rc<RefCell<ModelState>>);

#[derive(Default)]
struct ModelState {
    show_table: bool,
    rows: Vec<String>,
    /// The id the single `Detail` component shows.
    detail: Option<String>,
    store: Arc<Store>,
    row_reads: Arc<AtomicUsize>,
    /// What the rendered components' hooks returned.
    handles: Vec<AgentHandle>,
    renders: usize,
    pending_seen: Vec<String>,
    confirmations: Option<agent_surface_dioxus::PendingConfirmations>,
    activity: Option<agent_surface_dioxus::AgentActivity>,
}

fn app() -> Element {
    let model = use_context::<Model>();
    let state = model.0.borrow();
    let show = state.show_table;
    let rows = state.rows.clone();
    let detail = state.detail.clone();
    let selected = state.store.selected().len();
    drop(state);
    rsx! {
        if show {
            TableView { selected }
        }
        for id in rows {
            RowView { key: "{id}", id: id.clone() }
        }
        if let Some(id) = detail {
            DetailView { id }
        }
    }
}

/// Renders the selection count, so a changed selection re-renders it.
#[component]
fn TableView(selected: usize) -> Element {
    let model = use_context::<Model>();
    let store = Arc::clone(&model.0.borrow().store);
    let handle = use_agent_component(move || Arc::new(Table(store)));
    {
        let mut state = model.0.borrow_mut();
        state.renders += 1;
        state.handles.push(handle);
    }
    rsx! { table { "{selected} selected" } }
}

#[component]
fn RowView(id: String) -> Element {
    let model = use_context::<Model>();
    let reads = Arc::clone(&model.0.borrow().row_reads);
    let instance = id.clone();
    let handle = use_agent_instance(&id, move || {
        Arc::new(RowFace {
            id: instance,
            reads,
        })
    });
    model.0.borrow_mut().handles.push(handle);
    rsx! { tr { "{id}" } }
}

/// One component whose instance id follows its prop (no `key`): a changed
/// prop remounts rather than keep a handler built from the old one.
#[component]
fn DetailView(id: String) -> Element {
    let model = use_context::<Model>();
    let reads = Arc::clone(&model.0.borrow().row_reads);
    let instance = id.clone();
    let handle = use_agent_instance(&id, move || {
        Arc::new(RowFace {
            id: instance,
            reads,
        })
    });
    model.0.borrow_mut().handles.push(handle);
    rsx! { aside { "{id}" } }
}

fn registry() -> Registry {
    Registry::builder().environment(Environment::Test).build()
}

fn dom(registry: &Registry, model: &Model, root: fn() -> Element) -> VirtualDom {
    let mut dom = VirtualDom::new(root)
        .with_root_context(registry.clone())
        .with_root_context(model.clone());
    dom.rebuild_in_place();
    dom
}

/// Re-renders the root (and so every child whose props changed).
fn rerender(dom: &mut VirtualDom) {
    dom.mark_dirty(ScopeId::APP);
    dom.render_immediate_to_vec();
}

fn capability_ids(registry: &Registry) -> Vec<String> {
    registry
        .snapshot(&SnapshotOptions::default())
        .components()
        .iter()
        .flat_map(|component| {
            component
                .capabilities()
                .map(|c| c.id().to_owned())
                .collect::<Vec<_>>()
        })
        .collect()
}

fn events(registry: &Registry) -> (Arc<Mutex<Vec<SurfaceEvent>>>, impl Drop) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let subscription = registry.subscribe(move |event| {
        sink.lock().unwrap().push(event.clone());
    });
    (seen, subscription)
}

async fn call(registry: &Registry, invocation: Invocation) -> InvocationResult {
    registry
        .invoke(
            invocation,
            InvokeOptions::consumer(Consumer::new(ConsumerKind::Test, "agent")),
        )
        .await
}

#[test]
fn as_life_001_a_rendered_component_is_live_at_once_and_leaves_with_its_scope() {
    let registry = registry();
    let model = Model::default();
    model.0.borrow_mut().show_table = true;
    let mut dom = dom(&registry, &model, app);
    assert!(capability_ids(&registry).contains(&"view:test.table.delete".to_owned()));
    let handle = model.0.borrow().handles[0].clone();
    assert_eq!(handle.status(), Some(RegistrationStatus::Active));
    assert!(handle.registration_id().unwrap().starts_with("reg_"));

    // Conditional rendering: the component is no longer rendered.
    model.0.borrow_mut().show_table = false;
    rerender(&mut dom);
    assert!(
        capability_ids(&registry).is_empty(),
        "unmounted with the scope"
    );
    assert_eq!(
        handle.status(),
        None,
        "a kept clone does not keep the mount"
    );
    assert_eq!(handle.registration_id(), None);
    assert_eq!(
        Arc::strong_count(&model.0.borrow().store),
        1,
        "the registry dropped the component"
    );
}

#[tokio::test]
async fn as_life_005_remount_after_unrender_gets_a_new_registration_and_the_old_id_is_stale() {
    let registry = registry();
    let model = Model::default();
    model.0.borrow_mut().show_table = true;
    let mut dom = dom(&registry, &model, app);
    let first = model.0.borrow().handles[0].registration_id().unwrap();

    model.0.borrow_mut().show_table = false;
    rerender(&mut dom);
    model.0.borrow_mut().handles.clear();
    model.0.borrow_mut().show_table = true;
    rerender(&mut dom);
    let second = model.0.borrow().handles[0].registration_id().unwrap();
    assert_ne!(first, second);

    let stale = call(
        &registry,
        Invocation::new("view:test.table.selection").registration(&first),
    )
    .await;
    let error = stale.error().unwrap();
    assert_eq!(error.code(), ErrorCode::StaleCapability);
    assert_eq!(
        error.detail("reason"),
        Some(&json!("registration-replaced"))
    );
    assert_eq!(error.detail("liveRegistrationId"), Some(&json!(second)));
}

#[test]
fn a_second_render_does_not_mount_again() {
    let registry = registry();
    let model = Model::default();
    model.0.borrow_mut().show_table = true;
    let mut dom = dom(&registry, &model, app);
    let version = registry.version();
    let (seen, _subscription) = events(&registry);
    for _ in 0..3 {
        dom.mark_all_dirty();
        dom.render_immediate_to_vec();
    }
    let state = model.0.borrow();
    assert_eq!(state.renders, 4, "the component rendered four times");
    let ids: Vec<_> = state
        .handles
        .iter()
        .map(|h| h.registration_id().unwrap())
        .collect();
    assert!(
        ids.iter().all(|id| *id == ids[0]),
        "one registration: {ids:?}"
    );
    assert_eq!(
        registry
            .snapshot(&SnapshotOptions::default())
            .components()
            .len(),
        1
    );
    assert_eq!(
        registry.version(),
        version,
        "nothing changed, nothing bumped"
    );
    assert!(
        seen.lock().unwrap().is_empty(),
        "{:?}",
        seen.lock().unwrap()
    );
}

#[tokio::test]
async fn as_avail_001_a_re_render_pushes_availability_without_an_agent_call() {
    let registry = registry();
    let model = Model::default();
    model.0.borrow_mut().show_table = true;
    let mut dom = dom(&registry, &model, app);
    let unavailable = call(&registry, Invocation::new("view:test.table.delete")).await;
    let error = unavailable.error().unwrap();
    assert_eq!(error.code(), ErrorCode::CapabilityNotAvailable);
    assert_eq!(error.detail("reason"), Some(&json!("Select a row first")));
    let (seen, _subscription) = events(&registry);
    let version = registry.version();

    // The person selects a row; the component re-renders.
    model.0.borrow().store.select(&["r1"]);
    rerender(&mut dom);
    assert_eq!(registry.version(), version + 1, "one bump, no agent call");
    let pushed = seen.lock().unwrap().clone();
    assert!(
        pushed.iter().any(|e| matches!(
            e,
            SurfaceEvent::AvailabilityChanged { capability_id, available: true, .. }
                if &**capability_id == "view:test.table.delete"
        )),
        "{pushed:?}"
    );
    assert!(
        pushed
            .iter()
            .any(|e| matches!(e, SurfaceEvent::SurfaceChanged { .. }))
    );
    let snapshot = registry.snapshot(&SnapshotOptions::default());
    let (_, delete) = snapshot.capability("view:test.table.delete").unwrap();
    assert!(delete.available());

    // Rendering again with the same state pushes nothing.
    seen.lock().unwrap().clear();
    rerender(&mut dom);
    assert_eq!(registry.version(), version + 1);
    assert!(seen.lock().unwrap().is_empty());
}

#[test]
fn list_items_mount_under_instance_ids_from_their_data() {
    let registry = registry();
    let model = Model::default();
    model.0.borrow_mut().rows = vec!["d1".into(), "d2".into(), "d3".into()];
    let mut dom = dom(&registry, &model, app);
    let instances = |registry: &Registry| {
        let mut ids: Vec<String> = registry
            .snapshot(&SnapshotOptions::default())
            .components()
            .iter()
            .map(|c| c.instance_id().to_owned())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(instances(&registry), ["d1", "d2", "d3"]);
    let before: Vec<_> = model
        .0
        .borrow()
        .handles
        .iter()
        .map(|h| h.registration_id().unwrap())
        .collect();

    // Reordered and one removed: the kept rows keep their registrations.
    model.0.borrow_mut().handles.clear();
    model.0.borrow_mut().rows = vec!["d3".into(), "d1".into()];
    rerender(&mut dom);
    assert_eq!(instances(&registry), ["d1", "d3"]);
    let snapshot = registry.snapshot(&SnapshotOptions::default());
    let kept: Vec<_> = snapshot
        .components()
        .iter()
        .map(|c| c.registration_id().to_owned())
        .collect();
    assert!(kept.contains(&before[0]) && kept.contains(&before[2]));
    assert!(!kept.contains(&before[1]));
}

#[tokio::test]
async fn as_life_005_a_changed_instance_remounts_and_the_old_handler_is_never_called() {
    let registry = registry();
    let model = Model::default();
    model.0.borrow_mut().detail = Some("d1".into());
    let mut dom = dom(&registry, &model, app);
    let old = model.0.borrow().handles[0].registration_id().unwrap();

    model.0.borrow_mut().detail = Some("d2".into());
    rerender(&mut dom);
    let snapshot = registry.snapshot(&SnapshotOptions::default());
    assert_eq!(snapshot.components().len(), 1);
    assert_eq!(snapshot.components()[0].instance_id(), "d2");
    let reads = Arc::clone(&model.0.borrow().row_reads);

    let stale = call(
        &registry,
        Invocation::new("view:test.row.id")
            .instance("d1")
            .registration(&old),
    )
    .await;
    assert!(stale.error().is_some(), "{stale:?}");
    assert_eq!(reads.load(Ordering::SeqCst), 0, "the old handler never ran");
    let live = call(
        &registry,
        Invocation::new("view:test.row.id").instance("d2"),
    )
    .await;
    assert_eq!(live.output(), Some(&json!("d2")));
    assert_eq!(reads.load(Ordering::SeqCst), 1);
}

fn no_provider() -> Element {
    let handle = use_agent_component(|| Arc::new(Table(Arc::default())));
    let model = use_context::<Model>();
    model.0.borrow_mut().handles.push(handle);
    rsx! {}
}

#[test]
fn without_a_provider_nothing_is_mounted_and_the_handle_says_why() {
    let model = Model::default();
    let mut dom = VirtualDom::new(no_provider).with_root_context(model.clone());
    dom.rebuild_in_place();
    let handle = model.0.borrow().handles[0].clone();
    assert_eq!(handle.error(), Some(AgentMountError::NoRegistry));
    assert_eq!(handle.registration_id(), None);
    assert!(!handle.invalidate());
}

fn dialog_app() -> Element {
    let model = use_context::<Model>();
    let pending = use_pending_confirmations();
    let revision = use_surface_revision();
    let _ = revision();
    let store = Arc::clone(&model.0.borrow().store);
    let _table = use_agent_component(move || Arc::new(Table(store)));
    let list = pending.list();
    {
        let mut state = model.0.borrow_mut();
        state.pending_seen = list.iter().map(|p| p.display_input()).collect();
        state.confirmations = Some(pending);
        state.renders += 1;
    }
    rsx! {
        for request in list {
            dialog { key: "{request.confirmation_id}", "{request.summary}" }
        }
    }
}

/// Lets the `VirtualDom` run its tasks until it has a render to do.
async fn settle(dom: &mut VirtualDom) {
    tokio::time::timeout(Duration::from_secs(5), dom.wait_for_work())
        .await
        .expect("the VirtualDom had work");
    dom.render_immediate_to_vec();
}

#[tokio::test(start_paused = true)]
async fn as_confirm_003_the_pending_confirmations_hook_renders_and_answers_requests() {
    let registry = registry();
    let model = Model::default();
    model.0.borrow().store.select(&["r1", "r2"]);
    let mut dom = dom(&registry, &model, dialog_app);
    assert!(model.0.borrow().pending_seen.is_empty());

    // The agent asks; the request shows in the page.
    let asked = call(&registry, Invocation::new("view:test.table.delete")).await;
    let id = asked
        .error()
        .and_then(|e| e.detail("confirmationId"))
        .and_then(|v| v.as_str())
        .unwrap()
        .to_owned();
    settle(&mut dom).await;
    assert_eq!(model.0.borrow().pending_seen, ["{}"]);
    let pending = model.0.borrow().confirmations.unwrap();
    assert_eq!(
        pending.first().unwrap().capability_id.as_ref(),
        "view:test.table.delete"
    );

    // The person approves in the page what the dialog presents; the retry
    // runs once, then the evidence is spent.
    let approver = registry
        .confirmations()
        .approver(agent_surface::confirmation::HOST_CHANNEL, "person")
        .unwrap();
    let shown = pending.presented().unwrap().request.shown();
    assert_eq!(*shown.confirmation_id, *id);
    // A click the moment it appears was not meant for it.
    assert_eq!(
        pending.approve(&shown, &approver),
        Err(agent_surface_dioxus::AnswerError::TooSoon)
    );
    tokio::time::advance(Duration::from_millis(agent_surface_dioxus::ANSWER_DELAY_MS)).await;
    let resolution = pending.approve(&shown, &approver).unwrap();
    assert_eq!(resolution.channel.as_deref(), Some("host"));
    assert_eq!(resolution.approver.as_deref(), Some("person"));
    settle(&mut dom).await;
    assert!(model.0.borrow().pending_seen.is_empty());
    let run = call(
        &registry,
        Invocation::new("view:test.table.delete").confirmation(&id),
    )
    .await;
    assert_eq!(run.output(), Some(&json!(2)));
    let replay = call(
        &registry,
        Invocation::new("view:test.table.delete").confirmation(&id),
    )
    .await;
    assert_eq!(
        replay.error().and_then(|e| e.detail("reason")),
        Some(&json!("consumed"))
    );
    assert_eq!(model.0.borrow().store.deletes.load(Ordering::SeqCst), 1);

    // A denial: nothing runs.
    let asked = call(&registry, Invocation::new("view:test.table.delete")).await;
    let id = asked
        .error()
        .and_then(|e| e.detail("confirmationId"))
        .and_then(|v| v.as_str())
        .unwrap()
        .to_owned();
    settle(&mut dom).await;
    assert_eq!(model.0.borrow().pending_seen.len(), 1);
    let shown = pending.presented().unwrap().request.shown();
    tokio::time::advance(Duration::from_millis(agent_surface_dioxus::ANSWER_DELAY_MS)).await;
    pending.deny(&shown, &approver).unwrap();
    settle(&mut dom).await;
    assert!(model.0.borrow().pending_seen.is_empty());
    let denied = call(
        &registry,
        Invocation::new("view:test.table.delete").confirmation(&id),
    )
    .await;
    assert_eq!(
        denied.error().map(|e| e.code()),
        Some(ErrorCode::ConfirmationInvalid)
    );
    assert_eq!(
        denied.error().and_then(|e| e.detail("reason")),
        Some(&json!("denied"))
    );
    assert_eq!(model.0.borrow().store.deletes.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn an_agent_call_re_renders_readers_of_the_surface_revision() {
    let registry = registry();
    let model = Model::default();
    let mut dom = dom(&registry, &model, dialog_app);
    let renders = model.0.borrow().renders;
    let read = call(&registry, Invocation::new("view:test.table.selection")).await;
    assert!(read.is_ok(), "{read:?}");
    settle(&mut dom).await;
    assert!(
        model.0.borrow().renders > renders,
        "the settled call re-rendered the component"
    );
}

#[tokio::test(start_paused = true)]
async fn as_confirm_001_a_request_that_ends_on_screen_stays_presented_and_no_click_resolves_the_next()
 {
    let (registry, model, mut dom, approver) = dialog_with_a_selection();

    // Request A is on screen.
    let a = call(&registry, Invocation::new("view:test.table.delete")).await;
    let a = asked_id(&a);
    settle(&mut dom).await;
    let pending = model.0.borrow().confirmations.unwrap();
    let shown_a = pending.presented().unwrap().request.shown();
    assert_eq!(*shown_a.confirmation_id, *a);

    // A is withdrawn (its component went away) and B arrives before the
    // person's click lands.
    let registration = pending
        .presented()
        .unwrap()
        .request
        .registration_id
        .to_string();
    assert_eq!(
        registry
            .confirmations()
            .withdraw_registration(&registration, "replaced"),
        1
    );
    model.0.borrow().store.select(&["r2"]);
    let b = call(&registry, Invocation::new("view:test.table.delete")).await;
    let b = asked_id(&b);
    settle(&mut dom).await;
    let presented = pending.presented().unwrap();
    assert_eq!(*presented.request.confirmation_id, *a, "A stays on screen");
    let ended = presented.ended.unwrap();
    assert_eq!(
        ended.outcome,
        agent_surface::confirmation::ConfirmationOutcome::Withdrawn
    );
    assert_eq!(ended.reason, Some("replaced"));

    // The click meant for A resolves nothing; B still waits.
    assert!(pending.approve(&shown_a, &approver).is_err());
    assert_eq!(pending.list().len(), 1);
    assert_eq!(*pending.list()[0].confirmation_id, *b);
    assert_eq!(model.0.borrow().store.deletes.load(Ordering::SeqCst), 0);

    // Dismissed, the dialog presents B, live.
    pending.dismiss();
    let presented = pending.presented().unwrap();
    assert_eq!(*presented.request.confirmation_id, *b);
    assert!(presented.is_live());
}

#[tokio::test(start_paused = true)]
async fn as_confirm_001_a_double_click_never_answers_the_request_that_follows() {
    let (registry, model, mut dom, approver) = dialog_with_a_selection();
    let first = call(&registry, Invocation::new("view:test.table.delete")).await;
    assert!(first.error().is_some());
    // Another agent asks the same.
    let second = registry
        .invoke(
            Invocation::new("view:test.table.delete"),
            InvokeOptions::consumer(Consumer::new(ConsumerKind::Test, "other-agent")),
        )
        .await;
    let second = asked_id(&second);
    settle(&mut dom).await;
    let pending = model.0.borrow().confirmations.unwrap();
    tokio::time::advance(Duration::from_millis(agent_surface_dioxus::ANSWER_DELAY_MS)).await;

    // The first click answers the first request; the second click of the
    // double-click lands on the next one at once, and does nothing.
    let shown = pending.presented().unwrap().request.shown();
    pending.approve(&shown, &approver).unwrap();
    let next = pending.presented().unwrap();
    assert_ne!(next.request.confirmation_id, shown.confirmation_id);
    assert_eq!(registry.confirmations().pending().len(), 1);
    assert_eq!(
        pending.approve(&next.request.shown(), &approver),
        Err(agent_surface_dioxus::AnswerError::TooSoon)
    );
    assert!(
        registry
            .confirmations()
            .find(&next.request.confirmation_id)
            .is_some(),
        "still waiting"
    );
    let _ = second;
    // Once the person had time to see it, it takes an answer.
    tokio::time::advance(Duration::from_millis(agent_surface_dioxus::ANSWER_DELAY_MS)).await;
    pending.deny(&next.request.shown(), &approver).unwrap();
}

/// The dialog app with row r1 selected, and the host's approver.
fn dialog_with_a_selection() -> (
    Registry,
    Model,
    VirtualDom,
    agent_surface::confirmation::Approver,
) {
    let registry = registry();
    let model = Model::default();
    model.0.borrow().store.select(&["r1"]);
    let dom = dom(&registry, &model, dialog_app);
    let approver = registry
        .confirmations()
        .approver(agent_surface::confirmation::HOST_CHANNEL, "person")
        .unwrap();
    (registry, model, dom, approver)
}

/// The confirmation id a `CONFIRMATION_REQUIRED` result carries.
fn asked_id(result: &InvocationResult) -> String {
    result
        .error()
        .and_then(|e| e.detail("confirmationId"))
        .and_then(|v| v.as_str())
        .unwrap()
        .to_owned()
}

fn activity_app() -> Element {
    let model = use_context::<Model>();
    let activity = agent_surface_dioxus::use_agent_activity(4);
    let store = Arc::clone(&model.0.borrow().store);
    let _table = use_agent_component(move || Arc::new(Table(store)));
    model.0.borrow_mut().activity = Some(activity);
    let _ = activity.entries();
    rsx! {}
}

#[tokio::test(start_paused = true)]
async fn the_activity_hook_lists_calls_requests_answers_and_expiries_bounded() {
    use agent_surface_dioxus::Activity;
    let registry = registry();
    let model = Model::default();
    model.0.borrow().store.select(&["r1"]);
    let mut dom = dom(&registry, &model, activity_app);
    let activity = model.0.borrow().activity.unwrap();

    let read = call(&registry, Invocation::new("view:test.table.selection")).await;
    assert!(read.is_ok());
    let asked = call(&registry, Invocation::new("view:test.table.delete")).await;
    let id = asked_id(&asked);
    let confirmations = registry.confirmations();
    confirmations
        .approve(&confirmations.find(&id).unwrap().shown())
        .unwrap();
    let run = call(
        &registry,
        Invocation::new("view:test.table.delete").confirmation(&id),
    )
    .await;
    assert!(run.is_ok(), "{run:?}");
    settle(&mut dom).await;
    let entries = activity.entries();
    assert_eq!(
        entries.len(),
        4,
        "bounded to the capacity asked: {entries:?}"
    );
    // Newest first: the approved call that ran, the answer, the request,
    // the refused first attempt (the read fell off the end).
    match &entries[0].what {
        Activity::Call {
            capability_id,
            error: None,
            approved: Some(title),
            ..
        } => {
            assert_eq!(&**capability_id, "view:test.table.delete");
            assert!(!title.is_empty());
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(&*entries[0].who, "test:agent");
    match &entries[1].what {
        Activity::Answered {
            outcome, channel, ..
        } => {
            assert_eq!(*outcome, "approved");
            assert_eq!(channel.as_deref(), Some("host"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(&*entries[1].who, "host");
    assert!(
        matches!(
            &entries[2].what,
            Activity::Call {
                error: Some(ErrorCode::ConfirmationRequired),
                ..
            }
        ),
        "{entries:?}"
    );
    assert!(
        matches!(&entries[3].what, Activity::Asked { confirmation_id, .. } if **confirmation_id == *id)
    );

    // An expiry says so.
    let again = call(&registry, Invocation::new("view:test.table.delete")).await;
    assert!(again.error().is_some());
    tokio::time::advance(registry.limits().confirmation_ttl + Duration::from_millis(1)).await;
    registry.confirmations().expire_due();
    settle(&mut dom).await;
    let entries = activity.entries();
    assert!(
        matches!(
            &entries[0].what,
            Activity::Answered {
                outcome: "expired",
                ..
            }
        ),
        "{entries:?}"
    );
}
