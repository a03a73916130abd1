// A string written alone, a parallel count past 32 bits and a timeout past
// 64 bits: each is named for what it is.
use agent_surface::prelude::*;
pub struct A;
/// M.
#[agent_component("devices.table")]
impl A {
    /// Go.
    #[action(effect = "local-state", concurrency = "parallel(99999999999999999999999)")]
    fn go(&self) {}
    /// Go2.
    #[action(effect = "local-state", timeout = "99999999999999999999999999ms")]
    fn go2(&self) {}
}
fn main() {}
