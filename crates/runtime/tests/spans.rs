//! Every primitive, plan step and scope opens a tracing span naming handle, locations and bytes.
#![allow(clippy::unwrap_used, clippy::redundant_closure_for_method_calls)]

mod common;

use std::sync::Arc;

use common::*;
use fhelium_residency::{MemoryReservation, ResidencyAction, ResidencyPlan};
use fhelium_runtime::TransferStreams;
use parking_lot::Mutex;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// (span name, field names) of every span opened.
type Seen = Vec<(String, Vec<String>)>;

#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Seen>>);

struct Fields(Vec<String>);
impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, _: &dyn std::fmt::Debug) {
        self.0.push(field.name().to_owned());
    }
}

impl<S: Subscriber> Layer<S> for Spans {
    fn on_new_span(&self, attrs: &Attributes<'_>, _: &Id, _: Context<'_, S>) {
        let mut f = Fields(Vec::new());
        attrs.record(&mut f);
        self.0
            .lock()
            .push((attrs.metadata().name().to_owned(), f.0));
    }
}

#[test]
fn primitives_plan_steps_and_scopes_are_spanned() {
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    tracing::subscriber::with_default(subscriber, || {
        let mem = memory();
        let m = manager(&mem, &[]);
        let h = repl(&m, 1);
        m.ensure(&h, N, None).unwrap();
        m.move_to(&h, S0, Some(N), None).unwrap();
        m.drop_at(&h, S0).unwrap();
        let plan = ResidencyPlan::new("spanned")
            .unwrap()
            .with_enter([ResidencyAction::EnsureResident {
                handle: (*h).clone(),
                location: N,
            }])
            .with_reservations([MemoryReservation::new(N, 8, "ws").unwrap()]);
        m.enter_scope(&plan, &TransferStreams::new(), None)
            .unwrap()
            .close()
            .unwrap();
        m.discard(&h).unwrap();
    });
    let got = spans.0.lock().clone();
    let find = |name: &str| {
        got.iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no span {name}: {got:?}"))
            .1
            .clone()
    };
    for (name, fields) in [
        ("residency.adopt", &["handle", "bytes"][..]),
        ("residency.ensure", &["handle", "to", "bytes"]),
        ("residency.move", &["handle", "to", "from", "bytes"]),
        ("residency.drop", &["handle", "at", "bytes"]),
        ("residency.discard", &["handle", "bytes"]),
        ("residency.reserve", &["location", "bytes"]),
        ("residency.scope_enter", &["plan"]),
        (
            "residency.plan_step",
            &["phase", "index", "action", "handle"],
        ),
        ("residency.scope_exit", &["plan"]),
    ] {
        let f = find(name);
        for x in fields {
            assert!(f.iter().any(|g| g == x), "{name} lacks {x}: {f:?}");
        }
    }
}
