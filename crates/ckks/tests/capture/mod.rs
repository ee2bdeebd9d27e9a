//! A `tracing` layer that keeps every span (name, fields, parent) and event of a test, shared
//! by the span tests of the CPU engine (`spans`) and of the CUDA engine (`gpu_ops`).
//!
//! One global subscriber (installed on first use) routes what happens on a thread to the
//! [`Capture`] that thread is running under. A per-thread `with_default` subscriber is not
//! enough when tests run in parallel: a callsite first reached on a thread without one can
//! cache "never interested" while another thread's subscriber is being set up, and its spans
//! are then lost for the whole binary.

#![allow(dead_code)] // each test binary uses its own subset

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Once};

use parking_lot::Mutex;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;

/// One span as the test saw it: its name, its fields (recorded later ones included, `&str`
/// values without quotes, others by `Debug`) and its parent's name.
#[derive(Clone, Debug, Default)]
pub struct SpanSeen {
    pub id: u64,
    pub name: String,
    pub fields: BTreeMap<String, String>,
    pub parent: Option<String>,
}

impl SpanSeen {
    /// The value of field `f`; panics naming the span when it has none.
    pub fn field(&self, f: &str) -> &str {
        self.fields
            .get(f)
            .unwrap_or_else(|| panic!("span {} has no field {f}: {:?}", self.name, self.fields))
    }
}

/// One event: its level, fields and the name of the span it happened in.
#[derive(Clone, Debug)]
pub struct EventSeen {
    pub level: tracing::Level,
    pub fields: BTreeMap<String, String>,
    pub span: Option<String>,
}

#[derive(Default)]
struct Seen {
    spans: Vec<SpanSeen>,
    events: Vec<EventSeen>,
}

/// The capturing layer; clones share what they saw.
#[derive(Clone, Default)]
pub struct Capture(Arc<Mutex<Seen>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

thread_local! {
    /// The capture this thread runs under (`Capture::during`).
    static ACTIVE: RefCell<Option<Capture>> = const { RefCell::new(None) };
}

/// The global layer: hands each callback to the calling thread's capture, if any.
struct Router;

fn active() -> Option<Capture> {
    ACTIVE.with(|a| a.borrow().clone())
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Router {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if let Some(c) = active() {
            c.on_new_span(attrs, id, ctx);
        }
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(c) = active() {
            c.on_record(id, values, ctx);
        }
    }
    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        if let Some(c) = active() {
            c.on_event(event, ctx);
        }
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let parent = ctx
            .span(id)
            .and_then(|s| s.parent())
            .map(|p| p.name().to_owned());
        self.0.lock().spans.push(SpanSeen {
            id: id.into_u64(),
            name: attrs.metadata().name().to_owned(),
            fields,
            parent,
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut seen = self.0.lock();
        // Ids are reused after a span closes: the newest span with this id is the live one.
        if let Some(s) = seen.spans.iter_mut().rev().find(|s| s.id == id.into_u64()) {
            values.record(&mut Fields(&mut s.fields));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let span = ctx.event_span(event).map(|s| s.name().to_owned());
        self.0.lock().events.push(EventSeen {
            level: *event.metadata().level(),
            fields,
            span,
        });
    }
}

impl Capture {
    /// Runs `f` with what happens on this thread (every level) going to this capture.
    pub fn during<T>(&self, f: impl FnOnce() -> T) -> T {
        static INSTALL: Once = Once::new();
        INSTALL.call_once(|| {
            tracing_subscriber::registry()
                .with(Router)
                .try_init()
                .expect("the test binary's global subscriber");
        });
        ACTIVE.with(|a| *a.borrow_mut() = Some(self.clone()));
        let out = f();
        ACTIVE.with(|a| *a.borrow_mut() = None);
        out
    }

    /// Every span seen, in order of creation.
    pub fn spans(&self) -> Vec<SpanSeen> {
        self.0.lock().spans.clone()
    }

    /// The spans named `name`, in order of creation.
    pub fn named(&self, name: &str) -> Vec<SpanSeen> {
        self.spans()
            .into_iter()
            .filter(|s| s.name == name)
            .collect()
    }

    /// The only span named `name`; panics listing what was seen otherwise.
    pub fn one(&self, name: &str) -> SpanSeen {
        let found = self.named(name);
        assert_eq!(
            found.len(),
            1,
            "expected one span {name}, saw {}: {:?}",
            found.len(),
            self.spans().iter().map(|s| &s.name).collect::<Vec<_>>()
        );
        found[0].clone()
    }

    /// Every event seen, in order.
    pub fn events(&self) -> Vec<EventSeen> {
        self.0.lock().events.clone()
    }
}
