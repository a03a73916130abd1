//! The scripted scenario: "show me the offline devices in Milan, select the
//! visible ones and disable them", carried out through the embedded toolset
//! by a scripted agent with no model. The agent knows only the public
//! capability ids of the devices surface; it finds tools through the
//! toolset's catalog (never a hard-coded wire name) and follows the retry
//! hints results carry.

use std::io::Write;

use agent_surface::confirmation::PendingConfirmation;
use agent_surface::error::Retry;
use agent_surface::toolset::{ConfirmationMode, Toolset, Topology};
use agent_surface::{Consumer, ConsumerKind, InvocationResult};
use serde_json::{Value, json};

use crate::app::App;

/// What the scenario achieved.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The devices the agent selected.
    pub selected: Vec<String>,
    /// The devices the backend reported disabled.
    pub disabled: u64,
    /// The statuses the table showed afterwards, by device id.
    pub statuses_after: Vec<(String, String)>,
    /// Whether replaying the used evidence was refused as consumed.
    pub replay_refused: bool,
    /// Whether the disable procedure was offered at all.
    pub disable_offered: bool,
}

/// Who answers the confirmations the agent's calls wait for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Approval {
    /// The transcript approves on the user's behalf (the terminal run).
    #[default]
    Scripted,
    /// A person answers in the host's dialog (the web console); the agent
    /// waits for the answer and never retries a denial.
    Person,
}

/// The scripted agent: a toolset, a transcript, and a step counter.
struct Agent<'a> {
    app: &'a App,
    approval: Approval,
    toolset: Toolset,
    out: &'a mut dyn Write,
    step: u32,
    calls: u32,
    /// The evidence of the last approved retry.
    last_confirmation: Option<String>,
}

fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// One result, in one readable line.
fn describe(result: &InvocationResult) -> String {
    match result.error() {
        None => match result.output() {
            Some(output) => format!("ok {}", compact(output)),
            None => "ok".to_owned(),
        },
        Some(error) => {
            let details = error.details().map(|d| compact(&Value::Object(d.clone())));
            format!(
                "{} (retry: {}){}",
                error.code(),
                error.retry().as_str(),
                details.map(|d| format!(" {d}")).unwrap_or_default()
            )
        }
    }
}

/// What a call is for, told to the person watching.
fn intent(capability_id: &str, input: &Value) -> String {
    match capability_id {
        "view:devices.filters.set" if input["status"] == "all" => {
            "I show every device again, to check what changed.".to_owned()
        }
        "view:devices.filters.set" => "I show the offline devices in Milan.".to_owned(),
        "view:devices.table.readState" => "I read the table.".to_owned(),
        "view:devices.table.selectRows" => {
            let count = input["ids"].as_array().map_or(0, Vec::len);
            format!("I select the {count} devices I see.")
        }
        "domain:devices.disable" => "I ask to disable the selected devices.".to_owned(),
        "view:app.navigation.goTo" => "The devices are on another page: I go there.".to_owned(),
        _ => "I use another tool of the page.".to_owned(),
    }
}

/// How a call ended, told to the person watching (`None`: nothing to add).
fn result_story(result: &InvocationResult) -> Option<String> {
    let error = result.error()?;
    Some(match error.code() {
        agent_surface::ErrorCode::ConfirmationRequired => return None,
        agent_surface::ErrorCode::CapabilityNotAvailable => {
            "That is not possible right now on this page.".to_owned()
        }
        agent_surface::ErrorCode::NotAuthorized => "You are not allowed to do that.".to_owned(),
        _ => "That did not work.".to_owned(),
    })
}

impl Agent<'_> {
    /// Whether the transcript is a story for a person watching the page
    /// (rather than the protocol steps a developer reads).
    fn story(&self) -> bool {
        self.approval == Approval::Person
    }

    /// A protocol line (the developer's transcript).
    fn say(&mut self, line: impl AsRef<str>) {
        if !self.story() {
            let _ = writeln!(self.out, "{}", line.as_ref());
        }
    }

    /// A line of the story (the page's transcript).
    fn tell(&mut self, line: impl AsRef<str>) {
        if self.story() {
            let _ = writeln!(self.out, "{}", line.as_ref());
        }
    }

    /// A line both transcripts carry.
    fn both(&mut self, line: impl AsRef<str>) {
        let _ = writeln!(self.out, "{}", line.as_ref());
    }

    fn next(&mut self) -> u32 {
        self.step += 1;
        self.step
    }

    /// The tool of a capability in the catalog the agent was shown.
    fn tool_name(&self, capability_id: &str) -> Option<String> {
        self.toolset
            .tool_for(capability_id, None)
            .map(|tool| tool.name().to_owned())
    }

    fn discover(&mut self) {
        let n = self.next();
        let tools = self.toolset.tools();
        let names: Vec<String> = tools.iter().map(|t| t.name().to_owned()).collect();
        self.say(format!("{n}. discover: {} tools", names.len()));
        self.tell("I look at what this page lets me do.");
        for tool in tools.iter() {
            let state = tool.state();
            let status = match (&state.unavailable_reason, &state.note) {
                (Some(reason), _) if !state.available => format!(" — unavailable: {reason}"),
                (_, Some(note)) => format!(" — {note}"),
                _ => String::new(),
            };
            self.say(format!("   {}{status}", tool.name()));
        }
    }

    /// Calls a capability through its tool and prints the exchange.
    async fn call(&mut self, capability_id: &str, input: Value) -> Option<InvocationResult> {
        let Some(name) = self.tool_name(capability_id) else {
            let n = self.next();
            self.say(format!(
                "{n}. {capability_id}: not in the catalog — the console does not offer it to this agent for this user"
            ));
            self.tell("The console does not let me do that for you.");
            return None;
        };
        self.calls += 1;
        let call_id = format!("call_{}", self.calls);
        let n = self.next();
        self.say(format!("{n}. {name} {}", compact(&input)));
        self.tell(intent(capability_id, &input));
        let result = self
            .toolset
            .execute(&name, input.clone(), Some(&call_id))
            .await;
        self.say(format!("   → {}", describe(&result)));
        if let Some(line) = result_story(&result)
            && result.error().map(agent_surface::ErrorPayload::retry) != Some(Retry::AfterRefresh)
        {
            self.tell(line);
        }
        match result.error().map(agent_surface::ErrorPayload::retry) {
            Some(Retry::WithConfirmation) => {
                Some(self.confirm_and_retry(&name, input, result).await)
            }
            // The surface moved under the agent: look again, retry once.
            Some(Retry::AfterRefresh) => {
                self.discover();
                let name = self.tool_name(capability_id)?;
                self.calls += 1;
                let call_id = format!("call_{}", self.calls);
                let n = self.next();
                self.say(format!("{n}. {name} {}", compact(&input)));
                let retried = self.toolset.execute(&name, input, Some(&call_id)).await;
                self.say(format!("   → {}", describe(&retried)));
                if let Some(line) = result_story(&retried) {
                    self.tell(line);
                }
                Some(retried)
            }
            _ => Some(result),
        }
    }

    /// Follows a `with-confirmation` hint: the user decides in the host's
    /// dialog, then the agent retries with the confirmation id.
    async fn confirm_and_retry(
        &mut self,
        name: &str,
        input: Value,
        asked: InvocationResult,
    ) -> InvocationResult {
        let Some(id) = asked
            .error()
            .and_then(|e| e.detail("confirmationId"))
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return asked;
        };
        let pending: Option<PendingConfirmation> = self
            .app
            .registry()
            .confirmations()
            .pending()
            .into_iter()
            .find(|p| *p.confirmation_id == *id);
        if let Some(pending) = &pending {
            self.say(format!(
                "   the host asks the user: \"{}\" ({} effect), input {}",
                pending.summary,
                pending.effect.as_str(),
                compact(&pending.input)
            ));
        }
        let n = self.next();
        let approved = match self.approval {
            // The terminal run: the host shows the request above and answers
            // it as the user, through its own channel.
            Approval::Scripted => pending.as_ref().is_some_and(|pending| {
                self.app
                    .registry()
                    .confirmations()
                    .approve(&pending.shown())
                    .is_ok()
            }),
            Approval::Person => {
                if let Some(pending) = &pending {
                    let title = pending.presentation.title.clone();
                    self.tell(format!(
                        "This needs your approval: \u{201c}{title}\u{201d}. I wait for your answer in the dialog."
                    ));
                }
                let outcome = self.app.registry().confirmations().wait_for(&id).await;
                outcome == Some(agent_surface::confirmation::ConfirmationOutcome::Approved)
            }
        };
        if self.approval == Approval::Person && !approved {
            self.tell("You did not approve it, so I stop: nothing was done.");
            return asked;
        }
        self.tell("You approved it, so I go ahead.");
        self.say(format!(
            "{n}. the user {} {id}",
            if approved {
                "approves"
            } else {
                "could not approve"
            }
        ));
        self.calls += 1;
        let call_id = format!("call_{}", self.calls);
        let n = self.next();
        self.say(format!(
            "{n}. {name} {} with confirmationId {id}",
            compact(&input)
        ));
        let result = self
            .toolset
            .execute_with(name, input, Some(&call_id), Some(&id))
            .await;
        self.say(format!("   → {}", describe(&result)));
        if let Some(line) = result_story(&result) {
            self.tell(line);
        }
        self.last_confirmation = Some(id);
        result
    }
}

/// Runs the scenario for the app's user, writing the transcript to `out`;
/// the transcript approves the confirmation on the user's behalf.
pub async fn run(app: &App, out: &mut dyn Write) -> Outcome {
    run_with(app, out, Approval::Scripted).await
}

/// Runs the scenario with confirmations answered as `approval` says.
pub async fn run_with(app: &App, out: &mut dyn Write, approval: Approval) -> Outcome {
    let toolset = match Toolset::builder(app.registry())
        .consumer(
            Consumer::new(ConsumerKind::Embedded, "scripted-agent").with_label("Scripted agent"),
        )
        .topology(Topology::Embedded)
        // Two-phase, so the transcript shows each protocol step.
        .confirmations(ConfirmationMode::TwoPhase)
        .build()
    {
        Ok(toolset) => toolset,
        Err(err) => {
            let _ = writeln!(out, "error: {err}");
            return Outcome::default();
        }
    };
    let user = app.user();
    let _ = if approval == Approval::Person {
        writeln!(
            out,
            "You asked: \u{201c}show me the offline devices in Milan, select the visible ones and disable them\u{201d}\n"
        )
    } else {
        writeln!(
            out,
            "The user ({}: {}) asks: \"show me the offline devices in Milan, select the visible ones and disable them\"\n",
            user.id,
            user.permissions.join(", ")
        )
    };
    let mut agent = Agent {
        app,
        approval,
        toolset,
        out,
        step: 0,
        calls: 0,
        last_confirmation: None,
    };
    let mut outcome = Outcome::default();
    agent.discover();
    // The devices tools exist only while the devices page is shown: go
    // there first, as a person would.
    if agent.tool_name("view:devices.filters.set").is_none()
        && agent.tool_name("view:app.navigation.goTo").is_some()
    {
        agent.say("   the devices tools are not offered on this page: go to /devices");
        let mut version = app.registry().watch_version();
        agent
            .call("view:app.navigation.goTo", json!({"route": "/devices"}))
            .await;
        // The page mounts its components as it renders: wait (bounded)
        // until its tools are offered, following the surface's version.
        let toolset = agent.toolset.clone();
        let appeared = tokio::time::timeout(std::time::Duration::from_secs(5), async move {
            while toolset.tool_for("view:devices.filters.set", None).is_none() {
                if version.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
        if appeared.is_err() {
            agent.say("   the devices page did not appear");
            agent.tell("The devices page did not appear.");
        }
        agent.discover();
    }
    outcome.disable_offered = agent.tool_name("domain:devices.disable").is_some();

    agent
        .call(
            "view:devices.filters.set",
            json!({"status": "offline", "city": "Milan"}),
        )
        .await;
    let state = agent.call("view:devices.table.readState", json!({})).await;
    let visible: Vec<String> = state
        .as_ref()
        .and_then(InvocationResult::output)
        .and_then(|o| o["visibleRows"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|row| row["id"].as_str().map(str::to_owned))
        .collect();
    if visible.is_empty() {
        agent.both("No offline devices in Milan: nothing to do.");
        return outcome;
    }
    let selected = agent
        .call("view:devices.table.selectRows", json!({"ids": visible}))
        .await;
    if selected.as_ref().is_some_and(InvocationResult::is_ok) {
        outcome.selected.clone_from(&visible);
    }
    let disabled = agent.call("domain:devices.disable", json!({})).await;
    let Some(disabled) = disabled else {
        agent.say("The agent reports: you are not allowed to disable devices.");
        agent.tell("You are not allowed to disable devices, so I stop.");
        return outcome;
    };
    outcome.disabled = disabled
        .output()
        .and_then(|o| o["disabled"].as_u64())
        .unwrap_or(0);
    // Disabled devices leave the offline view (and the selection): show
    // every status to see them.
    agent
        .call("view:devices.filters.set", json!({"status": "all"}))
        .await;
    let after = agent.call("view:devices.table.readState", json!({})).await;
    outcome.statuses_after = after
        .as_ref()
        .and_then(InvocationResult::output)
        .and_then(|o| o["visibleRows"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|row| {
            let id = row["id"].as_str()?;
            outcome.selected.iter().any(|s| s == id).then(|| {
                (
                    id.to_owned(),
                    row["status"].as_str().unwrap_or_default().to_owned(),
                )
            })
        })
        .collect();

    // A replay of the same evidence: refused (a protocol step shown to
    // developers; the person's story ends with the result).
    let evidence = agent.last_confirmation.clone().filter(|_| !agent.story());
    if let (Some(id), Some(name)) = (evidence, agent.tool_name("domain:devices.disable")) {
        agent.calls += 1;
        let call_id = format!("call_{}", agent.calls);
        let n = agent.next();
        agent.say(format!("{n}. {name} {{}} replaying confirmationId {id}"));
        let replay = agent
            .toolset
            .execute_with(&name, json!({}), Some(&call_id), Some(&id))
            .await;
        agent.say(format!("   → {}", describe(&replay)));
        outcome.replay_refused = replay.error().is_some();
        if replay
            .error()
            .is_some_and(|e| e.code() == agent_surface::ErrorCode::CapabilityNotAvailable)
        {
            agent.say(
                "   refused before the evidence is even looked at: nothing is selected any more \
                 (and the evidence was single use)",
            );
        }
    }
    outcome
}
