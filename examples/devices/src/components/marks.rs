//! What an agent changed last, per area of the console, so the page can
//! mark it ("Changed by Claude Desktop 1.4") until the person changes that
//! area themselves.

use super::Console;

/// An area of the console an agent can change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Area {
    /// The filter bar.
    Filters,
    /// The row selection.
    Selection,
    /// The table's sorting.
    Sorting,
}

/// Who last changed each area, when it was an agent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentMarks {
    /// The agent that set the filters.
    pub filters: Option<String>,
    /// The agent that set the selection.
    pub selection: Option<String>,
    /// The agent that set the sorting.
    pub sorting: Option<String>,
}

impl AgentMarks {
    fn slot(&mut self, area: Area) -> &mut Option<String> {
        match area {
            Area::Filters => &mut self.filters,
            Area::Selection => &mut self.selection,
            Area::Sorting => &mut self.sorting,
        }
    }
}

impl Console {
    /// An agent changed `area`: `who` is its label (or key).
    pub fn marked_by_agent(&self, area: Area, who: &str) {
        *self.state().marks.slot(area) = Some(who.to_owned());
    }

    /// The person changed `area`: its mark goes.
    pub(super) fn unmark(&self, area: Area) {
        *self.state().marks.slot(area) = None;
    }

    /// Who last changed each area, when it was an agent.
    pub fn marks(&self) -> AgentMarks {
        self.state().marks.clone()
    }
}
