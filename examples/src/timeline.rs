//! The timeline of a run: spans on tracks (one per location and stream), instants, and
//! per-location memory counters against their budgets; exported as Chrome trace-event JSON
//! (Perfetto, `chrome://tracing`) and as an SVG memory-over-time chart.
//!
//! Sources:
//! - the runtime's `tracing` spans (`residency.ensure`, `residency.drop`, `residency.reserve`,
//!   `residency.plan_step`, ...) and the memory layer's `copy` events, captured by
//!   [`TimelineLayer`] when it is installed in a `tracing` subscriber;
//! - the runtime's transition reports (start/completion times, action, bytes);
//! - manager snapshots taken by the flow at each step ([`Timeline::sample`]), the exact
//!   used/reserved bytes per location; inside scope entry, where the manager runs reclaim,
//!   reservation admission and placement in one call, the counters are replayed from the
//!   entry transitions (reclaim, then the reservations, then placement: spec order) and the
//!   replay is checked against the snapshot taken right after;
//! - the flow's own spans: CKKS operations on the compute stream, the lease, the reservation.
//!   On the CPU engine an operation's span is its run; on the CUDA engine, which never waits
//!   on the host inside an operation (decision 0302), it is the host-side submission, and the
//!   GPU runs the work in order behind it.
//!
//! A disabled timeline ([`Timeline::disabled`]) records nothing and costs nothing.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use fhelium_cuda::Stream;
use fhelium_residency::{
    ResidencyAction, ResidencyLocation, ResidencyPlan, ResidencyTransitionReport,
};
use fhelium_runtime::ResidencyManager;
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::ExampleError;

/// Unix time in nanoseconds.
#[must_use]
pub fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// A span on a track.
#[derive(Clone, Debug, PartialEq)]
pub struct SpanRecord {
    /// The process-level group: a location name, `host` or `manager`.
    pub group: String,
    /// The track inside the group (`transitions`, `stream 3 (compute)`, ...).
    pub track: String,
    /// Span name.
    pub name: String,
    /// Category (`transition`, `kernel`, `lease`, `reservation`, `runtime`, `host`, `copy`).
    pub category: &'static str,
    /// Start, Unix ns.
    pub start_ns: u64,
    /// End, Unix ns.
    pub end_ns: u64,
    /// Key/value arguments shown in the trace viewer.
    pub args: Vec<(String, String)>,
}

/// One memory sample of one location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterRecord {
    /// The location.
    pub location: ResidencyLocation,
    /// Time, Unix ns.
    pub ts_ns: u64,
    /// Managed used bytes.
    pub used: u64,
    /// Reserved bytes.
    pub reserved: u64,
    /// What produced the sample (a flow step or a replayed transition).
    pub label: String,
}

#[derive(Default, Debug)]
struct Data {
    t0: u64,
    spans: Vec<SpanRecord>,
    counters: Vec<CounterRecord>,
    budgets: Vec<(ResidencyLocation, Option<u64>)>,
    stream_names: BTreeMap<u64, String>,
    replay_mismatches: Vec<String>,
}

/// The recorder. Cheap to clone (shared state); [`Timeline::disabled`] records nothing.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    inner: Option<Arc<Mutex<Data>>>,
}

/// Guard of a host-side span; records it when dropped.
#[derive(Debug)]
pub struct HostSpan {
    timeline: Timeline,
    name: &'static str,
    start: u64,
}

impl Drop for HostSpan {
    fn drop(&mut self) {
        let end = unix_ns();
        self.timeline.push_span(SpanRecord {
            group: "host".to_owned(),
            track: "program".to_owned(),
            name: self.name.to_owned(),
            category: "host",
            start_ns: self.start,
            end_ns: end,
            args: Vec::new(),
        });
    }
}

fn action_delta(r: &ResidencyTransitionReport) -> Vec<(ResidencyLocation, i128)> {
    if r.no_op() {
        return Vec::new();
    }
    let b = i128::from(r.parts().storage_nbytes);
    match r.action() {
        ResidencyAction::EnsureResident { location, .. } => vec![(*location, b)],
        ResidencyAction::MoveResident { to, .. } => {
            let mut v = vec![(*to, b)];
            if let Some(s) = r.parts().source {
                v.push((s, -b));
            }
            v
        }
        ResidencyAction::DropResident { location, .. } => vec![(*location, -b)],
        ResidencyAction::DiscardValue { .. } => Vec::new(),
    }
}

impl Timeline {
    /// A timeline that records nothing.
    #[must_use]
    pub fn disabled() -> Self {
        Self { inner: None }
    }

    /// A recording timeline; time zero is now.
    #[must_use]
    pub fn enabled() -> Self {
        Self {
            inner: Some(Arc::new(Mutex::new(Data {
                t0: unix_ns(),
                ..Data::default()
            }))),
        }
    }

    /// Whether it records.
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// Now, Unix ns.
    #[must_use]
    pub fn now(&self) -> u64 {
        unix_ns()
    }

    fn with(&self, f: impl FnOnce(&mut Data)) {
        if let Some(d) = &self.inner {
            f(&mut d.lock());
        }
    }

    fn with_ret<R>(&self, f: impl FnOnce(&mut Data) -> R) -> Option<R> {
        self.inner.as_ref().map(|d| f(&mut d.lock()))
    }

    fn push_span(&self, s: SpanRecord) {
        self.with(|d| d.spans.push(s));
    }

    /// The recorded spans.
    #[must_use]
    pub fn spans(&self) -> Vec<SpanRecord> {
        self.inner
            .as_ref()
            .map(|d| d.lock().spans.clone())
            .unwrap_or_default()
    }

    /// The recorded memory samples.
    #[must_use]
    pub fn counters(&self) -> Vec<CounterRecord> {
        self.inner
            .as_ref()
            .map(|d| d.lock().counters.clone())
            .unwrap_or_default()
    }

    /// Scope entries whose replayed counters disagreed with the snapshot after them (empty
    /// when the replay was exact).
    #[must_use]
    pub fn replay_mismatches(&self) -> Vec<String> {
        self.inner
            .as_ref()
            .map(|d| d.lock().replay_mismatches.clone())
            .unwrap_or_default()
    }

    /// Names a stream's track (`stream 3 (compute)`).
    pub fn name_stream(&self, stream: &Stream, label: &str) {
        self.with(|d| {
            d.stream_names.insert(stream.id(), label.to_owned());
        });
    }

    fn stream_track(d: &Data, id: u64) -> String {
        d.stream_names
            .get(&id)
            .map_or_else(|| format!("stream {id}"), |n| format!("stream {id} ({n})"))
    }

    /// Records the manager's locations and budgets (call once after building it).
    pub fn set_budgets(&self, manager: &ResidencyManager) {
        let Ok(locs) = manager.locations() else {
            return;
        };
        let budgets: Vec<_> = locs
            .into_iter()
            .map(|l| (l, manager.budget(l).ok().flatten()))
            .collect();
        self.with(|d| d.budgets = budgets);
    }

    /// Samples every location's used and reserved bytes from a manager snapshot. Never fails
    /// the flow: a closed manager is simply not sampled.
    pub fn sample(&self, manager: &ResidencyManager, label: &str) {
        if self.inner.is_none() {
            return;
        }
        let Ok(s) = manager.snapshot() else { return };
        let ts = unix_ns();
        self.with(|d| {
            for l in s.locations() {
                if !d.budgets.iter().any(|(x, _)| *x == l.location()) {
                    d.budgets.push((l.location(), l.budget_bytes()));
                }
                d.counters.push(CounterRecord {
                    location: l.location(),
                    ts_ns: ts,
                    used: l.used_bytes(),
                    reserved: l.reserved_bytes(),
                    label: label.to_owned(),
                });
            }
        });
    }

    /// A host-side span recorded when the guard drops.
    #[must_use]
    pub fn host_span(&self, name: &'static str) -> HostSpan {
        HostSpan {
            timeline: self.clone(),
            name,
            start: unix_ns(),
        }
    }

    /// Records transition reports as spans on `<location>/transitions`.
    pub fn transitions(&self, _since: u64, reports: &[ResidencyTransitionReport]) {
        for r in reports {
            let p = r.parts();
            let loc = p
                .destination
                .or(p.source)
                .map_or_else(|| "manager".to_owned(), |l| l.to_string());
            let mut args = vec![
                ("handle".to_owned(), r.action().handle().short_id()),
                ("bytes".to_owned(), p.storage_nbytes.to_string()),
                ("no_op".to_owned(), r.no_op().to_string()),
            ];
            if let Some(s) = p.source {
                args.push(("source".to_owned(), s.to_string()));
            }
            if let Some(s) = p.destination {
                args.push(("destination".to_owned(), s.to_string()));
            }
            self.push_span(SpanRecord {
                group: loc,
                track: "transitions".to_owned(),
                name: format!(
                    "{} {}",
                    r.action().kind_name(),
                    r.action().handle().short_id()
                ),
                category: "transition",
                start_ns: p.started_at_ns,
                end_ns: p.completed_at_ns.max(p.started_at_ns),
                args,
            });
        }
    }

    /// Records a scope entry: its transitions as spans, and counters replayed from the last
    /// sample through the reclaim transitions, the plan's reservations and the placement
    /// transitions; then an exact sample, against which the replay is checked.
    pub fn scope_entry(
        &self,
        since: u64,
        manager: &ResidencyManager,
        reports: &[ResidencyTransitionReport],
        plan: &ResidencyPlan,
        label: &str,
    ) {
        if self.inner.is_none() {
            return;
        }
        self.transitions(since, reports);
        let reclaim = plan.reclaim().len().min(reports.len());
        let replayed = self.with_ret(|d| {
            let mut cur: BTreeMap<ResidencyLocation, (i128, i128)> = BTreeMap::new();
            for c in &d.counters {
                cur.insert(c.location, (i128::from(c.used), i128::from(c.reserved)));
            }
            let mut points = Vec::new();
            let mut last_ts = since;
            for r in &reports[..reclaim] {
                for (l, delta) in action_delta(r) {
                    cur.entry(l).or_default().0 += delta;
                }
                last_ts = r.parts().completed_at_ns;
                points.push((last_ts, cur.clone(), r.action().kind_name()));
            }
            for res in plan.reservations() {
                cur.entry(res.location()).or_default().1 += i128::from(res.nbytes());
            }
            if !plan.reservations().is_empty() {
                points.push((last_ts, cur.clone(), "reserve"));
            }
            for r in &reports[reclaim..] {
                for (l, delta) in action_delta(r) {
                    cur.entry(l).or_default().0 += delta;
                }
                points.push((
                    r.parts().completed_at_ns,
                    cur.clone(),
                    r.action().kind_name(),
                ));
            }
            for (ts, state, what) in points {
                for (l, (u, r)) in state {
                    d.counters.push(CounterRecord {
                        location: l,
                        ts_ns: ts,
                        used: u64::try_from(u).unwrap_or(0),
                        reserved: u64::try_from(r).unwrap_or(0),
                        label: format!("{label}: {what}"),
                    });
                }
            }
            cur
        });
        self.sample(manager, label);
        let Some(replayed) = replayed else { return };
        self.with(|d| {
            let n = replayed.len();
            let exact: BTreeMap<ResidencyLocation, (i128, i128)> = d
                .counters
                .iter()
                .rev()
                .take(n)
                .map(|c| (c.location, (i128::from(c.used), i128::from(c.reserved))))
                .collect();
            if exact != replayed {
                d.replay_mismatches.push(format!(
                    "{label}: replay {replayed:?} != snapshot {exact:?}"
                ));
            }
        });
    }

    /// Times `f` as a kernel/op span on `stream`'s track.
    ///
    /// # Errors
    /// Those of `f`.
    pub fn op<T>(
        &self,
        stream: &Stream,
        name: &'static str,
        f: impl FnOnce() -> Result<T, ExampleError>,
    ) -> Result<T, ExampleError> {
        let start = unix_ns();
        let r = f();
        let end = unix_ns();
        self.with(|d| {
            let track = Self::stream_track(d, stream.id());
            d.spans.push(SpanRecord {
                group: stream.location().to_string(),
                track,
                name: name.to_owned(),
                category: "kernel",
                start_ns: start,
                end_ns: end,
                args: vec![("ok".to_owned(), r.is_ok().to_string())],
            });
        });
        r
    }

    /// A lease from `start` to now on `stream`'s track.
    pub fn lease(&self, stream: &Stream, start: u64, label: &str) {
        let end = unix_ns();
        self.with(|d| {
            let track = format!("{} leases", Self::stream_track(d, stream.id()));
            d.spans.push(SpanRecord {
                group: stream.location().to_string(),
                track,
                name: label.to_owned(),
                category: "lease",
                start_ns: start,
                end_ns: end,
                args: Vec::new(),
            });
        });
    }

    /// A reservation's lifetime on `<location>/reservations`.
    pub fn reservation(
        &self,
        location: ResidencyLocation,
        label: &str,
        nbytes: u64,
        start: u64,
        end: u64,
    ) {
        self.push_span(SpanRecord {
            group: location.to_string(),
            track: "reservations".to_owned(),
            name: label.to_owned(),
            category: "reservation",
            start_ns: start,
            end_ns: end.max(start),
            args: vec![("bytes".to_owned(), nbytes.to_string())],
        });
    }

    /// A `tracing` layer that records the runtime's spans and the memory layer's copy events
    /// into this timeline.
    #[must_use]
    pub fn layer(&self) -> TimelineLayer {
        TimelineLayer {
            timeline: self.clone(),
        }
    }

    /// The Chrome trace-event JSON (`{"traceEvents": [...]}`): one process per group
    /// (location, `host`, `manager`), one thread per track, `X` events for spans and `C`
    /// counter events (`used`, `reserved`, `budget` in MiB) per location.
    #[must_use]
    pub fn chrome_trace(&self) -> Value {
        let Some(inner) = &self.inner else {
            return json!({ "traceEvents": [] });
        };
        let d = inner.lock();
        let mut groups: Vec<String> = d.budgets.iter().map(|(l, _)| l.to_string()).collect();
        let mut tracks: Vec<(String, String)> = Vec::new();
        for s in &d.spans {
            if !groups.contains(&s.group) {
                groups.push(s.group.clone());
            }
            if !tracks.contains(&(s.group.clone(), s.track.clone())) {
                tracks.push((s.group.clone(), s.track.clone()));
            }
        }
        let pid = |g: &str| groups.iter().position(|x| x == g).map_or(0, |i| i + 1);
        let tid = |g: &str, t: &str| {
            tracks
                .iter()
                .position(|(a, b)| a == g && b == t)
                .map_or(0, |i| i + 1)
        };
        #[allow(clippy::cast_precision_loss)] // microsecond display
        let us = |ns: u64| ns.saturating_sub(d.t0) as f64 / 1000.0;
        #[allow(clippy::cast_precision_loss)]
        let mib = |b: u64| b as f64 / 1_048_576.0;
        let mut ev = Vec::new();
        for (i, g) in groups.iter().enumerate() {
            ev.push(json!({"ph": "M", "name": "process_name", "pid": i + 1, "args": {"name": g}}));
            ev.push(json!({"ph": "M", "name": "process_sort_index", "pid": i + 1, "args": {"sort_index": i}}));
        }
        for (g, t) in &tracks {
            ev.push(json!({"ph": "M", "name": "thread_name", "pid": pid(g), "tid": tid(g, t), "args": {"name": t}}));
        }
        for s in &d.spans {
            let args: serde_json::Map<String, Value> = s
                .args
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            ev.push(json!({
                "ph": "X", "name": s.name, "cat": s.category,
                "pid": pid(&s.group), "tid": tid(&s.group, &s.track),
                "ts": us(s.start_ns), "dur": us(s.end_ns) - us(s.start_ns),
                "args": args,
            }));
        }
        for c in &d.counters {
            let budget = d
                .budgets
                .iter()
                .find(|(l, _)| *l == c.location)
                .and_then(|(_, b)| *b);
            let mut args = json!({"used MiB": mib(c.used), "reserved MiB": mib(c.reserved)});
            if let Some(b) = budget {
                args["budget MiB"] = json!(mib(b));
            }
            ev.push(json!({
                "ph": "C", "name": format!("{} memory", c.location),
                "pid": pid(&c.location.to_string()), "ts": us(c.ts_ns), "args": args,
            }));
        }
        json!({ "traceEvents": ev, "displayTimeUnit": "ms" })
    }

    /// Writes [`Timeline::chrome_trace`] to `path`.
    ///
    /// # Errors
    /// [`ExampleError::Output`].
    pub fn write_chrome_trace(&self, path: &str) -> Result<(), ExampleError> {
        let text =
            serde_json::to_string(&self.chrome_trace()).map_err(|e| ExampleError::Output {
                path: path.to_owned(),
                reason: e.to_string(),
            })?;
        std::fs::write(path, text).map_err(|e| ExampleError::Output {
            path: path.to_owned(),
            reason: e.to_string(),
        })
    }

    /// Writes an SVG chart of managed memory over time, one panel per location: used bytes,
    /// used + reserved bytes (step lines) and the budget (dashed).
    ///
    /// # Errors
    /// [`ExampleError::Output`].
    pub fn write_plot(&self, path: &str, title: &str) -> Result<(), ExampleError> {
        let svg = self
            .plot_svg(title)
            .map_err(|reason| ExampleError::Output {
                path: path.to_owned(),
                reason,
            })?;
        std::fs::write(path, svg).map_err(|e| ExampleError::Output {
            path: path.to_owned(),
            reason: e.to_string(),
        })
    }

    /// The SVG text of [`Timeline::write_plot`].
    ///
    /// # Errors
    /// A drawing error, as text.
    #[allow(clippy::cast_precision_loss)] // display only
    pub fn plot_svg(&self, title: &str) -> Result<String, String> {
        use plotters::prelude::*;
        let (t0, budgets, counters) = match &self.inner {
            Some(d) => {
                let d = d.lock();
                (d.t0, d.budgets.clone(), d.counters.clone())
            }
            None => (0, Vec::new(), Vec::new()),
        };
        let mut counters = counters;
        counters.sort_by_key(|c| c.ts_ns);
        // Time zero of the chart: the first sample (the manager's first value), so that key
        // generation before it does not squeeze the interesting part.
        let t0 = counters.first().map_or(t0, |c| c.ts_ns);
        let end_ns = counters
            .iter()
            .map(|c| c.ts_ns)
            .max()
            .unwrap_or(t0)
            .max(t0 + 1);
        let ms = |ns: u64| ns.saturating_sub(t0) as f64 / 1e6;
        let x_max = ms(end_ns) * 1.03;
        let mib = |b: u64| b as f64 / 1_048_576.0;
        let panels = budgets.len().max(1);
        let mut svg = String::new();
        {
            let height = 40 + 230 * u32::try_from(panels).unwrap_or(1);
            let root = SVGBackend::with_string(&mut svg, (960, height)).into_drawing_area();
            root.fill(&WHITE).map_err(|e| e.to_string())?;
            let root = root
                .titled(title, ("sans-serif", 20))
                .map_err(|e| e.to_string())?;
            let areas = root.split_evenly((panels, 1));
            for ((loc, budget), area) in budgets.iter().zip(areas) {
                let series: Vec<&CounterRecord> =
                    counters.iter().filter(|c| c.location == *loc).collect();
                let peak = series
                    .iter()
                    .map(|c| c.used + c.reserved)
                    .max()
                    .unwrap_or(0);
                let y_max = mib(budget.unwrap_or(0).max(peak)).max(1.0) * 1.15;
                let caption = format!(
                    "{loc}: budget {}",
                    budget.map_or_else(|| "none (unbudgeted)".to_owned(), crate::format_bytes)
                );
                let mut chart = ChartBuilder::on(&area)
                    .caption(caption, ("sans-serif", 15))
                    .margin(8)
                    .x_label_area_size(30)
                    .y_label_area_size(55)
                    .build_cartesian_2d(0f64..x_max, 0f64..y_max)
                    .map_err(|e| e.to_string())?;
                chart
                    .configure_mesh()
                    .x_desc("time since the first managed value (ms)")
                    .y_desc("MiB")
                    .light_line_style(WHITE)
                    .draw()
                    .map_err(|e| e.to_string())?;
                let step = |f: &dyn Fn(&CounterRecord) -> u64| {
                    let mut pts = Vec::new();
                    let mut prev: Option<f64> = None;
                    for c in &series {
                        let (x, y) = (ms(c.ts_ns), mib(f(c)));
                        if let Some(p) = prev {
                            pts.push((x, p));
                        }
                        pts.push((x, y));
                        prev = Some(y);
                    }
                    if let Some(p) = prev {
                        pts.push((x_max, p));
                    }
                    pts
                };
                let total = RGBColor(230, 140, 30);
                chart
                    .draw_series(LineSeries::new(
                        step(&|c| c.used + c.reserved),
                        total.stroke_width(2),
                    ))
                    .map_err(|e| e.to_string())?
                    .label("used + reserved")
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], total.stroke_width(2))
                    });
                let used = RGBColor(30, 100, 200);
                chart
                    .draw_series(LineSeries::new(step(&|c| c.used), used.stroke_width(2)))
                    .map_err(|e| e.to_string())?
                    .label("used")
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], used.stroke_width(2))
                    });
                if let Some(b) = budget {
                    let y = mib(*b);
                    let dashes: Vec<Vec<(f64, f64)>> = (0..60)
                        .map(|i| {
                            let a = x_max * f64::from(i) / 60.0;
                            vec![(a, y), (a + x_max / 120.0, y)]
                        })
                        .collect();
                    chart
                        .draw_series(
                            dashes
                                .into_iter()
                                .map(|p| PathElement::new(p, RED.stroke_width(2))),
                        )
                        .map_err(|e| e.to_string())?
                        .label("budget")
                        .legend(|(x, y)| {
                            PathElement::new(vec![(x, y), (x + 18, y)], RED.stroke_width(2))
                        });
                }
                if loc.is_device() {
                    // Mark the flow's steps (not the replayed points) once each.
                    let mut seen: Vec<&str> = Vec::new();
                    let mut marks = Vec::new();
                    for c in &series {
                        let l = c.label.as_str();
                        if !l.contains(':')
                            && !l.starts_with("adopt")
                            && l != "poll"
                            && !seen.contains(&l)
                        {
                            seen.push(l);
                            marks.push((ms(c.ts_ns), l.to_owned()));
                        }
                    }
                    let grey = RGBColor(120, 120, 120);
                    for (i, (x, text)) in marks.into_iter().enumerate() {
                        #[allow(clippy::cast_precision_loss)]
                        let y = y_max * (0.97 - 0.08 * (i % 4) as f64);
                        chart
                            .draw_series(std::iter::once(PathElement::new(
                                vec![(x, 0.0), (x, y)],
                                grey.mix(0.5).stroke_width(1),
                            )))
                            .map_err(|e| e.to_string())?;
                        chart
                            .draw_series(std::iter::once(Text::new(
                                text,
                                (x, y),
                                ("sans-serif", 11).into_font().color(&grey),
                            )))
                            .map_err(|e| e.to_string())?;
                    }
                }
                chart
                    .configure_series_labels()
                    .position(SeriesLabelPosition::LowerRight)
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK)
                    .draw()
                    .map_err(|e| e.to_string())?;
            }
            root.present().map_err(|e| e.to_string())?;
        }
        Ok(svg)
    }
}

/// A `tracing_subscriber` layer feeding a [`Timeline`]: `residency.*` and `kernel` spans
/// become spans on the track of the location they name (`to`, `at`, `location`), or on
/// `manager/runtime`; `copy` events become copy spans on the stream's track.
#[derive(Clone, Debug)]
pub struct TimelineLayer {
    timeline: Timeline,
}

#[derive(Default)]
struct Fields(Vec<(String, String)>);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
}

struct Started {
    start: u64,
    fields: Vec<(String, String)>,
}

impl Fields {
    fn get(&self, k: &str) -> Option<&str> {
        self.0.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str())
    }
}

/// The group of a span's fields: the first of `to`, `at`, `location` that names a location,
/// or `host` for the CPU engine's `location = "host"`.
fn location_of(fields: &[(String, String)]) -> Option<String> {
    ["to", "at", "location"].iter().find_map(|k| {
        fields.iter().find(|(a, _)| a == k).and_then(|(_, v)| {
            if v == "host" {
                return Some("host".to_owned());
            }
            let v = v
                .strip_prefix("Some(")
                .and_then(|x| x.strip_suffix(')'))
                .unwrap_or(v);
            parse_location(v).map(|l| l.to_string())
        })
    })
}

/// A location from its display form (`sim:0`) or its `Debug` form (`Sim(0)`, `PinnedHost`).
fn parse_location(v: &str) -> Option<ResidencyLocation> {
    if let Ok(l) = v.parse::<ResidencyLocation>() {
        return Some(l);
    }
    let index = |p: &str| {
        v.strip_prefix(p)
            .and_then(|x| x.strip_suffix(')'))
            .and_then(|x| x.parse::<u8>().ok())
    };
    match v {
        "PageableHost" => Some(ResidencyLocation::PageableHost),
        "PinnedHost" => Some(ResidencyLocation::PinnedHost),
        _ => index("Sim(")
            .map(ResidencyLocation::Sim)
            .or_else(|| index("Cuda(").map(ResidencyLocation::Cuda)),
    }
}

impl<S> tracing_subscriber::Layer<S> for TimelineLayer
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if !self.timeline.is_enabled() {
            return;
        }
        let mut f = Fields::default();
        attrs.record(&mut f);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(Started {
                start: unix_ns(),
                fields: f.0,
            });
        }
    }

    fn on_close(&self, id: tracing::span::Id, ctx: tracing_subscriber::layer::Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let name = span.name();
        let ext = span.extensions();
        let Some(st) = ext.get::<Started>() else {
            return;
        };
        let end = unix_ns();
        // A span without a location (a kernel launch) takes its nearest ancestor's.
        let group = location_of(&st.fields)
            .or_else(|| {
                span.scope().skip(1).find_map(|a| {
                    a.extensions()
                        .get::<Started>()
                        .and_then(|p| location_of(&p.fields))
                })
            })
            .unwrap_or_else(|| "manager".to_owned());
        // The memory layer's and the CUDA engine's launches (host enqueue time) go to
        // "kernels", the CKKS engines' operations to "ckks engine", the rest to "runtime".
        let (category, track) = match name {
            "kernel" | "ckks.kernel" | "ckks.chain" => ("kernel", "kernels"),
            n if n.starts_with("ckks.") => ("ckks", "ckks engine"),
            _ => ("runtime", "runtime"),
        };
        self.timeline.push_span(SpanRecord {
            group,
            track: track.to_owned(),
            name: name.to_owned(),
            category,
            start_ns: st.start,
            end_ns: end,
            args: st.fields.clone(),
        });
    }

    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if !self.timeline.is_enabled() {
            return;
        }
        let mut f = Fields::default();
        event.record(&mut f);
        if f.get("message") != Some("copy") {
            return;
        }
        let ts = unix_ns();
        let from = f.get("from").unwrap_or("?").to_owned();
        let to = f.get("to").unwrap_or("?").to_owned();
        let stream = f
            .get("stream")
            .map(|s| {
                s.trim_start_matches("Some(")
                    .trim_end_matches(')')
                    .to_owned()
            })
            .and_then(|s| s.parse::<u64>().ok());
        let bytes = f.get("bytes").unwrap_or("0").to_owned();
        let group = if to.starts_with("sim") || to.starts_with("cuda") {
            to.clone()
        } else {
            from.clone()
        };
        self.timeline.with(|d| {
            let track = stream.map_or_else(|| "copies".to_owned(), |id| Self::track_name(d, id));
            d.spans.push(SpanRecord {
                group,
                track,
                name: format!("copy {from} -> {to}"),
                category: "copy",
                start_ns: ts,
                end_ns: ts + 1000,
                args: vec![("bytes".to_owned(), bytes)],
            });
        });
    }
}

impl TimelineLayer {
    fn track_name(d: &Data, id: u64) -> String {
        Timeline::stream_track(d, id)
    }
}

/// Writes the requested outputs of a recorded timeline.
///
/// # Errors
/// [`ExampleError::Output`].
pub fn write_outputs(
    timeline: &Timeline,
    trace: Option<&str>,
    plot: Option<&str>,
    title: &str,
) -> Result<String, ExampleError> {
    let mut note = String::new();
    if let Some(p) = trace {
        timeline.write_chrome_trace(p)?;
        let _ = writeln!(
            note,
            "trace: {p} (open in https://ui.perfetto.dev or chrome://tracing)"
        );
    }
    if let Some(p) = plot {
        timeline.write_plot(p, title)?;
        let _ = writeln!(note, "plot: {p}");
    }
    Ok(note)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use fhelium_cuda::{Memory, Tensors};
    use fhelium_residency::{ReplicaMode, PAGEABLE_HOST};
    use tracing_subscriber::layer::SubscriberExt as _;

    const SIM0: ResidencyLocation = ResidencyLocation::Sim(0);

    #[test]
    fn locations_parse_in_display_and_debug_forms() {
        assert_eq!(parse_location("sim:0"), Some(SIM0));
        assert_eq!(parse_location("Sim(3)"), Some(ResidencyLocation::Sim(3)));
        assert_eq!(parse_location("Cuda(1)"), Some(ResidencyLocation::Cuda(1)));
        assert_eq!(
            parse_location("PinnedHost"),
            Some(ResidencyLocation::PinnedHost)
        );
        assert_eq!(parse_location("PageableHost"), Some(PAGEABLE_HOST));
        assert_eq!(parse_location("Sim(x)"), None);
        assert_eq!(parse_location("gpu"), None);
        let f = vec![("at".to_owned(), "Some(Sim(0))".to_owned())];
        assert_eq!(location_of(&f).as_deref(), Some("sim:0"));
    }

    #[test]
    fn a_disabled_timeline_records_nothing() {
        let t = Timeline::disabled();
        let mem = Memory::with_sim_devices(1);
        let m = ResidencyManager::builder(mem.clone())
            .budget(SIM0, 1024)
            .build()
            .unwrap();
        t.set_budgets(&m);
        t.sample(&m, "x");
        drop(t.host_span("y"));
        t.reservation(SIM0, "r", 8, 1, 2);
        assert!(t.spans().is_empty() && t.counters().is_empty());
        assert_eq!(t.chrome_trace()["traceEvents"].as_array().unwrap().len(), 0);
    }

    /// A small real run: adopt, ensure on sim:0 under a tracing subscriber with the layer;
    /// the trace has the runtime's spans on the device's track, the copy on the stream's
    /// track and counters that follow the manager's accounting.
    #[test]
    fn records_runtime_spans_copies_and_counters() {
        let t = Timeline::enabled();
        let mem = Memory::with_sim_devices(1);
        let m = ResidencyManager::builder(mem.clone())
            .budget(SIM0, 1 << 20)
            .build()
            .unwrap();
        let subscriber = tracing_subscriber::registry().with(t.layer());
        let _g = tracing::subscriber::set_default(subscriber);
        t.set_budgets(&m);
        let v = Tensors::upload(&mem, &PAGEABLE_HOST, &[&[7; 64]], None)
            .unwrap()
            .value;
        let h = m.adopt(v, None, ReplicaMode::Replicable).unwrap();
        t.sample(&m, "adopt");
        let s = mem.stream(&SIM0).unwrap();
        t.name_stream(&s, "transfer");
        let r = m.ensure(&h, SIM0, Some(&s)).unwrap();
        t.transitions(0, std::slice::from_ref(&r));
        t.sample(&m, "ensure");
        let dev: Vec<_> = t
            .counters()
            .into_iter()
            .filter(|c| c.location == SIM0)
            .collect();
        assert_eq!(dev.iter().map(|c| c.used).collect::<Vec<_>>(), vec![0, 512]);
        let spans = t.spans();
        assert!(spans.iter().any(|x| x.name == "residency.ensure"
            && x.group == "sim:0"
            && x.category == "runtime"));
        assert!(spans.iter().any(|x| x.category == "copy"
            && x.group == "sim:0"
            && x.track == format!("stream {} (transfer)", s.id())));
        assert!(spans
            .iter()
            .any(|x| x.category == "transition" && x.name.starts_with("EnsureResident")));
        let trace = t.chrome_trace();
        let ev = trace["traceEvents"].as_array().unwrap();
        let counters: Vec<_> = ev.iter().filter(|e| e["ph"] == "C").collect();
        assert!(counters
            .iter()
            .any(|e| e["name"] == "sim:0 memory" && e["args"]["budget MiB"] == 1.0));
        assert!(ev.iter().any(|e| e["ph"] == "M"
            && e["name"] == "process_name"
            && e["args"]["name"] == "sim:0"));
        let svg = t.plot_svg("test").unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("sim:0: budget 1.00 MiB"));
        m.discard(&h).unwrap();
    }

    /// The CKKS engines' operation spans (`ckks.<op>`, see fhelium-ckks's `tests/spans.rs`)
    /// land on a "ckks engine" track of the group their `location` names (`host` for the CPU
    /// engine), nested calls included; their kernel launches on "kernels". The spans here are
    /// made by hand: their callsites are this test's own, so no other test's first use of an
    /// engine callsite can race with this subscriber's registration.
    #[test]
    fn records_ckks_engine_spans_on_their_own_track() {
        let t = Timeline::enabled();
        let subscriber = tracing_subscriber::registry().with(t.layer());
        {
            let _g = tracing::subscriber::set_default(subscriber);
            let outer =
                tracing::debug_span!("ckks.encrypt_message", location = "host", slots = 16_usize)
                    .entered();
            drop(
                tracing::debug_span!("ckks.encrypt", location = "host", bytes = 1024_u64).entered(),
            );
            drop(outer);
            let op = tracing::debug_span!("ckks.rotate_with_key", location = %SIM0).entered();
            drop(
                tracing::trace_span!("ckks.kernel", op = "rotate_with_key", kernel = "aut_ntt")
                    .entered(),
            );
            drop(op);
        }
        let spans = t.spans();
        let get = |name: &str| {
            spans
                .iter()
                .find(|x| x.name == name)
                .unwrap_or_else(|| panic!("no {name}: {spans:?}"))
        };
        let (outer, inner) = (get("ckks.encrypt_message"), get("ckks.encrypt"));
        for s in [outer, inner] {
            assert_eq!(
                (s.group.as_str(), s.track.as_str(), s.category),
                ("host", "ckks engine", "ckks")
            );
        }
        assert!(outer.args.contains(&("slots".to_owned(), "16".to_owned())));
        assert!(inner
            .args
            .contains(&("bytes".to_owned(), "1024".to_owned())));
        assert!(inner.start_ns >= outer.start_ns && inner.end_ns <= outer.end_ns);
        let rot = get("ckks.rotate_with_key");
        assert_eq!(
            (rot.group.as_str(), rot.track.as_str()),
            ("sim:0", "ckks engine")
        );
        // A launch names no location: it takes its operation's, on the kernels track.
        let k = get("ckks.kernel");
        assert_eq!(
            (k.group.as_str(), k.track.as_str(), k.category),
            ("sim:0", "kernels", "kernel")
        );
    }

    #[test]
    fn output_errors_name_the_path() {
        let t = Timeline::enabled();
        let bad = "/nonexistent-dir/for/sure/t.json";
        for r in [t.write_chrome_trace(bad), t.write_plot(bad, "x")] {
            assert!(matches!(r, Err(ExampleError::Output { ref path, .. }) if path == bad));
        }
        assert!(write_outputs(&t, Some(bad), None, "x").is_err());
        assert_eq!(write_outputs(&t, None, None, "x").unwrap(), "");
    }
}
