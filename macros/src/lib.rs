//! Attribute macros of [agent-surface](https://docs.rs/agent-surface).
//!
//! Use them through `agent_surface::prelude::*`; this crate is an
//! implementation detail of `agent-surface` and its generated code refers to
//! `::agent_surface` paths.
//!
//! The pipeline of `#[agent_component]`: `ast` (the typed model of the impl
//! block, reporting malformed attributes) → `valid` (checks across the
//! block, with `helpers` for the signatures of named helper methods) →
//! `expand` (the contract, the dispatch, the catalog entry, the schema
//! test), or `fallback` after errors. `#[agent_procedure]` (the `procedure`
//! folder) and `#[agent_schema]` follow the same parse → check → expand →
//! fallback order. Every error is reported at the token that is wrong, all
//! of them in one build.
//!
//! Modules import in one direction, stage by stage (no import cycle):
//!
//! - leaves, importing no stage: `ctxt` (the error sink), `attr` (attribute
//!   arguments), `symbol` (attribute names and keys), `cfg`, `self_type`,
//!   `types` (Rust types as written), `digest`, `declared_policy`, `tokens`
//!   (token builders the expansions share), `recover`, `imports`;
//! - the model: `ast`, with `signature` (handler signatures) and
//!   `reference` (`#[reference(…)]`) below it, `wire_attrs` (a schema
//!   type's serde and schemars attributes) and `procedure::parse`;
//! - checks, over the model: `valid`, `helpers`, `wire`, `wire_keys`,
//!   `serde_shape`, `bounded` (with the bound assertions it generates) and
//!   `procedure::check`;
//! - expansion, over the model and the checks: `marker`, `dispatch`,
//!   `reach`, `expand`, `fallback`, `schema` and `procedure::expand`;
//! - this file wires the entry points.

mod agreement;
mod ast;
mod attr;
mod bounded;
mod cfg;
mod ctxt;
mod declared_policy;
mod digest;
mod dispatch;
mod expand;
mod fallback;
mod helpers;
mod imports;
mod marker;
mod names;
mod procedure;
mod reach;
mod recover;
mod reference;
mod schema;
mod self_type;
mod serde_shape;
mod signature;
mod symbol;
mod tokens;
mod types;
mod valid;
mod wire;
mod wire_attrs;
mod wire_keys;

use proc_macro::TokenStream;
use quote::quote;

/// Declares what an agent may observe and do with a component.
///
/// Goes on an inherent `impl` block. Methods marked `#[observation]` or
/// `#[action(…)]` become capabilities; other methods stay ordinary methods
/// (and may serve as `when`, `unavailable_reason` or `precondition`
/// helpers). Below it, `#[reference(…)]` declares the backend procedures
/// the component may reference.
///
/// | key | value | example |
/// |---|---|---|
/// | `type` | the component type (required) | `type = "devices.table"` |
/// | `description` | agent-facing text (else the doc comment) | `description = "The devices table"` |
/// | `instance` | the default instance id | `instance = "main"` |
/// | `priority` | snapshot order and budget (higher first) | `priority = 10` |
/// | `origin` | the registrant trust label | `origin = "first-party"` |
/// | `enabled` | the initial master switch | `enabled = false` |
/// | `parent(…)` | the containing component | `parent(type = "app.page", instance = "main")` |
/// | `meta(…)` | agent-visible metadata | `meta(area = "fleet")` |
/// | `internal(…)` | metadata for policies only | `internal(tenant = "acme")` |
/// | `policies` | component-level policies | `policies = [authenticated()]` |
///
/// See `agent_surface::agent_component` for a compiled example.
#[proc_macro_attribute]
pub fn agent_component(args: TokenStream, input: TokenStream) -> TokenStream {
    let item = match syn::parse::<syn::ItemImpl>(input.clone()) {
        Ok(item) => item,
        Err(_) if recover::is_impl(&input.clone().into()) => {
            return recover_impl(args.into(), input.into()).into();
        }
        Err(_) => {
            let input = proc_macro2::TokenStream::from(input);
            let error = syn::Error::new(
                proc_macro2::Span::call_site(),
                "#[agent_component] goes on an impl block: `#[agent_component(type = \"…\")] impl MyComponent { … }`",
            )
            .to_compile_error();
            return quote!(#input #error).into();
        }
    };
    let mut item = item;
    // A second `#[agent_component]` on the same block: one error at it,
    // and the block expands once.
    let twice = item
        .attrs
        .iter()
        .position(|attr| {
            attr.path()
                .segments
                .last()
                .is_some_and(|segment| segment.ident == "agent_component")
        })
        .map(|index| {
            let duplicate = item.attrs.remove(index);
            syn::Error::new_spanned(
                duplicate,
                "#[agent_component] is applied twice to this impl block; remove one of them",
            )
            .to_compile_error()
        });
    let cx = ctxt::Ctxt::default();
    let uses = imports::helper_uses(&item);
    let component = ast::Component::from_ast(&cx, args.into(), &item);
    valid::check(&cx, &component);
    let duplicates = valid::conditional_duplicates(&component);
    if cx.has_errors() {
        let fallback = fallback::expand(&component);
        let errors = cx.into_compile_errors();
        return quote!(#uses #fallback #errors #duplicates #twice).into();
    }
    let expanded = expand::expand(&component);
    quote!(#uses #expanded #duplicates #twice).into()
}

/// An impl block with a syntax error that rustc reports (see `recover`).
fn recover_impl(
    args: proc_macro2::TokenStream,
    input: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    let original = recover::without_helpers(input.clone());
    let Ok(item) = syn::parse2::<syn::ItemImpl>(recover::without_bodies(input)) else {
        return original;
    };
    let cx = ctxt::Ctxt::default();
    let component = ast::Component::from_ast(&cx, args, &item);
    valid::check(&cx, &component);
    let duplicates = valid::conditional_duplicates(&component);
    let placeholder = fallback::component_impl(&component);
    let errors = cx.into_compile_errors();
    quote!(#original #placeholder #errors #duplicates)
}

/// Marks a method of an `#[agent_component]` impl block as an observation:
/// a side-effect-free read of current state.
///
/// | key | value | example |
/// |---|---|---|
/// | `name` | the capability name (else the method name in camelCase) | `name = "readState"` |
/// | `description` | agent-facing text (else the doc comment) | `description = "Visible rows"` |
/// | `when` | a `fn(&self) -> bool` gating availability | `when = has_rows` |
/// | `unavailable_reason` | text, or a method returning it | `unavailable_reason = "No rows"` |
/// | `timeout` | how long a read may take | `timeout = "5s"` |
/// | `meta(…)` / `internal(…)` | metadata (agent-visible / policies only) | `meta(unit = "rows")` |
/// | `policies` | the capability's own policies | `policies = [has_permission("read")]` |
///
/// Also written `#[agent_surface::observation]`, or inside
/// `#[cfg_attr(pred, observation(…))]` (an observation only when `pred`
/// holds). Outside an `#[agent_component]` impl block, it is an error.
#[proc_macro_attribute]
pub fn observation(_args: TokenStream, input: TokenStream) -> TokenStream {
    outside_component("observation", input)
}

/// Marks a method of an `#[agent_component]` impl block as an action.
///
/// | key | value | example |
/// |---|---|---|
/// | `effect` | `local-state` or `navigation` (required) | `effect = "local-state"` |
/// | `name` | the capability name (else the method name in camelCase) | `name = "selectRows"` |
/// | `description` | agent-facing text (else the doc comment) | `description = "Select rows"` |
/// | `idempotent` / `reversible` | override the effect's defaults | `idempotent = true` |
/// | `confirmation` | `never`, `optional` or `required` | `confirmation = "required"` |
/// | `audit` | `none`, `metadata` or `full` | `audit = "full"` |
/// | `when` | a `fn(&self) -> bool` gating availability | `when = has_rows` |
/// | `unavailable_reason` | text, or a method returning it | `unavailable_reason = "No rows"` |
/// | `precondition` | a method checking the input before it runs | `precondition = rows_visible` |
/// | `concurrency` | `"instance"`, `"capability"`, `"key:…"` or `"parallel(n)"` | `concurrency = "parallel(4)"` |
/// | `queue_depth` | callers that may wait for the concurrency group | `queue_depth = 8` |
/// | `timeout` | how long a call may take | `timeout = "10s"` |
/// | `meta(…)` / `internal(…)` | metadata (agent-visible / policies only) | `internal(tenant = "acme")` |
/// | `policies` | the capability's own policies | `policies = [rate_limit(10, Duration::from_secs(60))]` |
///
/// Also written `#[agent_surface::action]`, or inside
/// `#[cfg_attr(pred, action(…))]` (an action only when `pred` holds).
/// Outside an `#[agent_component]` impl block, it is an error.
#[proc_macro_attribute]
pub fn action(_args: TokenStream, input: TokenStream) -> TokenStream {
    outside_component("action", input)
}

/// Declares, on an `#[agent_component]` impl block (below that attribute),
/// a backend procedure the component may reference, with the least gating
/// every mounted reference gives it:
///
/// `#[reference(DisableDevices, locked = [device_ids], when, confirmation =
/// "required", policies = [authenticated(), has_permission("devices:write")])]`
///
/// - `locked = [field, …]`: input fields every mount binds to UI state
///   with `.bind(…)` (the agent may not supply them);
/// - `when`: every mount gives the reference a `.when(…)` rule;
/// - `confirmation = "…"`: the least confirmation posture;
/// - `policies = [...]`: policies installed on every mounted reference.
///
/// The declaration is in the catalog and the contract hashes, so review
/// sees it; the registry refuses a mount whose reference is undeclared or
/// gives less. Anywhere else, it is an error.
#[proc_macro_attribute]
pub fn reference(_args: TokenStream, input: TokenStream) -> TokenStream {
    let input = proc_macro2::TokenStream::from(input);
    let error = syn::Error::new(
        proc_macro2::Span::call_site(),
        "#[reference(…)] goes on an impl block annotated with `#[agent_component(type = \"…\")]`, below that attribute",
    )
    .to_compile_error();
    quote!(#input #error).into()
}

fn outside_component(name: &str, input: TokenStream) -> TokenStream {
    let input = proc_macro2::TokenStream::from(input);
    let error = syn::Error::new(
        proc_macro2::Span::call_site(),
        format!(
            "#[{name}] was not read by an `#[agent_component]`: it goes on a method of an impl block annotated with `#[agent_component(type = \"…\")]`, written `#[{name}(…)]`, `#[agent_surface::{name}(…)]` or inside `#[cfg_attr(…, {name}(…))]` (the component recognises its helpers by these names: under a renamed import, or produced by another macro, it does not see them)"
        ),
    )
    .to_compile_error();
    quote!(#input #error).into()
}

/// Declares the contract of a backend procedure on its input struct.
///
/// The struct becomes a schema type (as with `#[agent_schema]`, unless it
/// carries that attribute itself), implements `Procedure`, and gets a
/// companion `{Name}Fields` struct of typed field handles that procedure
/// references bind to live state.
///
/// Keys: `id = "domain:<path>"` (required),
/// `effect = "server-query" | "server-mutation" | "external-side-effect" |
/// "destructive"` (required), `description = "…"` (or the doc comment),
/// `confirmation = "never" | "optional" | "required"` (a destructive
/// procedure cannot go below `optional`), `audit = "none" | "metadata" |
/// "full"`, `idempotent`, `output = OutputType` (a path or a generic type
/// such as `Vec<Row>` is fine unquoted), `timeout = "30s"`.
///
/// Used on anything but a struct with named fields, it is an error:
/// procedure inputs are JSON objects.
#[proc_macro_attribute]
pub fn agent_procedure(args: TokenStream, input: TokenStream) -> TokenStream {
    procedure::expand(args.into(), input.into()).into()
}

/// Makes a struct or enum usable as a capability input or output.
///
/// Adds serde's `Serialize`/`Deserialize` and schemars' `JsonSchema` derives
/// (no direct dependency on either needed), the surface's wire conventions
/// (`camelCase` names, unknown fields rejected on structs and on enums' struct
/// variants), and a
/// compile-time check that every field type has a schema inside the subset.
///
/// Options: `#[agent_schema(output)]` (serialize only),
/// `#[agent_schema(input)]` (deserialize only),
/// `#[agent_schema(allow_unknown_fields)]`, and `#[agent_schema(unbounded)]`
/// (on the type or on one field: strings, lists, maps and free-form JSON
/// there are left to the registry's `Limits::max_input_bytes`). Your own
/// `#[serde(rename_all = …)]` or derives take precedence: write
/// `#[agent_schema]` above your `#[derive(Serialize, Deserialize,
/// JsonSchema)]` and it reuses them (a derive written above an attribute
/// macro is invisible to it).
///
/// A struct with a `#[serde(flatten)]` field does not reject unknown
/// fields (serde cannot, with a flattened field): its schema has no
/// `additionalProperties: false`, and a property the agent adds is ignored.
/// Rename with serde (`#[serde(rename = …)]`, `rename_all`) and skip with
/// serde (`#[serde(skip)]`): schemars' own `rename` and `skip` change the
/// schema alone, so they are compile errors, as is a skip in one direction
/// of a type that goes both ways and a wire name tool schemas do not take
/// (1 to 64 ASCII letters, digits, `_`, `.` or `-`).
///
/// An `#[serde(untagged)]` enum is the schema's `anyOf` of its variants, and
/// serde reads the agent's value as the **first variant, in declaration
/// order, that deserializes it**: where variants overlap (an object with
/// fields `a` and `b` also fits a variant with just `a`, unless that one
/// denies unknown fields, which `#[agent_schema]` does for structs), the
/// earlier one wins. Declare the most specific variant first.
///
/// An `Option<Option<T>>` field read with `#[serde(default,
/// deserialize_with = …)]` tells an absent field (`None`: leave it as it
/// is), `null` (`Some(None)`: clear it) and a value apart: the registry
/// never fills an absent field with a `null` default. Without
/// `deserialize_with` serde reads both as `None`, so an input's
/// `Option<Option<T>>` field without it is a compile error. An `f32` field takes
/// only numbers a finite `f32` holds.
///
/// Every string, list, map or free-form value an agent can send is bounded
/// (`#[schemars(length(max = …))]`, `inner(length(max = …))` for a list's
/// items) or declared `unbounded`: checked at compile time where the type
/// is taken as an input, nested types included.
///
/// (An example is on `agent_surface::agent_schema`.)
#[proc_macro_attribute]
pub fn agent_schema(args: TokenStream, input: TokenStream) -> TokenStream {
    schema::expand(args.into(), input.into()).into()
}
