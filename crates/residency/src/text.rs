//! The text IR: plans and decisions as listings, one action per line (issue 3, item 2).
//!
//! `Display` prints a listing and [`parse_plan`] / [`parse_decision`] (also `FromStr`) read it
//! back; printing then parsing gives an equal value. Comments start with `#` outside quotes
//! and are ignored (the printer uses them for human-readable byte figures).
//!
//! ```text
//! plan "automatic/rotate-scale/tile-0"
//!   reclaim drop h1.b7bda0d2:Plaintext at cuda:0
//!   reserve cuda:0 6291456 "rotate/multiply outputs and workspace"  # 6.00 MiB
//!   enter move h1.44440003:Ciphertext to cuda:0 from pinned-host
//!   enter ensure h1.33330002:RotationKey at cuda:0
//! end
//! ```
//!
//! A handle prints as `h<manager hex>.<handle hex>:<type>`; names, labels and reasons are
//! double-quoted with `\"` and `\\` escapes; bytes are exact decimal integers.

use std::fmt::{self, Write as _};
use std::str::FromStr;

use crate::decision::{
    EvictionReason, ResidencyDecision, ResidencyDecisionParts, ResidencyEviction,
};
use crate::error::ModelError;
use crate::location::ResidencyLocation;
use crate::model::{MemoryReservation, ResidencyAction, ResidencyHandle};
use crate::plan::{ResidencyPlan, ResidencyRequest, ResidencyRequirement};
use crate::report::{ResidencyActionExplanation, ResidencyPlanExplanation};

/// Formats bytes as FHElium's tables do: `512 B`, `1.50 KiB`, `27.00 MiB`, `2.00 GiB`.
#[must_use]
pub fn format_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    #[allow(clippy::cast_precision_loss)]
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.2} {}", UNITS[unit])
}

/// A double-quoted string with `\"`, `\\` and `\n` escapes.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The IR token of a handle.
fn handle_token(h: &ResidencyHandle) -> String {
    let ty = h.value_type();
    let bare = !ty.is_empty()
        && ty
            .chars()
            .all(|c| !c.is_whitespace() && c != '"' && c != '#' && c != '\\');
    let ty = if bare { ty.to_owned() } else { quote(ty) };
    format!("h{:x}.{:x}:{ty}", h.manager_id(), h.handle_id())
}

/// Writes the IR form of an action: `ensure H at L`, `move H to L [from L]`, `drop H at L`,
/// `discard H`.
fn write_action(f: &mut impl fmt::Write, a: &ResidencyAction) -> fmt::Result {
    match a {
        ResidencyAction::EnsureResident { handle, location } => {
            write!(f, "ensure {} at {location}", handle_token(handle))
        }
        ResidencyAction::MoveResident { handle, to, from } => {
            write!(f, "move {} to {to}", handle_token(handle))?;
            if let Some(from) = from {
                write!(f, " from {from}")?;
            }
            Ok(())
        }
        ResidencyAction::DropResident { handle, location } => {
            write!(f, "drop {} at {location}", handle_token(handle))
        }
        ResidencyAction::DiscardValue { handle } => write!(f, "discard {}", handle_token(handle)),
    }
}

impl fmt::Display for ResidencyAction {
    /// The IR form, e.g. `move h1.2a:Ciphertext to cuda:0 from pinned-host`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_action(f, self)
    }
}

fn write_reservation(f: &mut impl fmt::Write, r: &MemoryReservation) -> fmt::Result {
    write!(
        f,
        "  reserve {} {} {}  # {}",
        r.location(),
        r.nbytes(),
        quote(r.label()),
        format_bytes(r.nbytes())
    )
}

impl fmt::Display for ResidencyPlan {
    /// The plan listing, in execution order: reclaim, reserve, enter, exit.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "plan {}", quote(self.name()))?;
        for a in self.reclaim() {
            f.write_str("  reclaim ")?;
            write_action(f, a)?;
            writeln!(f)?;
        }
        for r in self.reservations() {
            write_reservation(f, r)?;
            writeln!(f)?;
        }
        for (phase, actions) in [("enter", self.enter()), ("exit", self.exit())] {
            for a in actions {
                write!(f, "  {phase} ")?;
                write_action(f, a)?;
                writeln!(f)?;
            }
        }
        writeln!(f, "end")
    }
}

fn write_explanation_line(
    f: &mut impl fmt::Write,
    i: usize,
    e: &ResidencyActionExplanation,
) -> fmt::Result {
    write!(
        f,
        "  explain {i} {}",
        if e.executable {
            "executable"
        } else {
            "blocked"
        }
    )?;
    if e.no_op {
        f.write_str(" no-op")?;
    }
    if let Some(s) = e.source {
        write!(f, " source={s}")?;
    }
    if let Some(d) = e.destination {
        write!(f, " destination={d}")?;
    }
    write!(
        f,
        " logical={} storage={}",
        e.logical_nbytes, e.storage_nbytes
    )?;
    if let Some(r) = &e.reason {
        write!(f, " reason={}", quote(r))?;
    }
    Ok(())
}

impl fmt::Display for ResidencyDecision {
    /// The decision listing: identity, requirements, reservations, reclaim steps with their
    /// eviction evidence, enter actions, the dry run of every action, predicted peaks.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.parts();
        writeln!(f, "decision {}", quote(p.plan.name()))?;
        writeln!(f, "  manager {}", p.manager_id)?;
        writeln!(f, "  state_version {}", p.expected_state_version)?;
        writeln!(f, "  explored_states {}", p.explored_states)?;
        writeln!(f, "  policy {}", quote(&p.policy_name))?;
        for (k, v) in &p.policy_config {
            writeln!(f, "  config {} {}", quote(k), quote(v))?;
        }
        for r in p.request.requirements() {
            writeln!(f, "  require {} at {}", handle_token(&r.handle), r.location)?;
        }
        for r in p.request.reservations() {
            write_reservation(f, r)?;
            writeln!(f)?;
        }
        for e in &p.evictions {
            f.write_str("  reclaim ")?;
            write_action(f, &e.action)?;
            writeln!(
                f,
                " rank={} released={} bytes={} reason={}  # {}",
                e.rank,
                e.released_location,
                e.released_nbytes,
                quote(&e.reason.to_string()),
                format_bytes(e.released_nbytes)
            )?;
        }
        for a in p.plan.enter() {
            f.write_str("  enter ")?;
            write_action(f, a)?;
            writeln!(f)?;
        }
        for (i, e) in p.explanation.actions.iter().enumerate() {
            write_explanation_line(f, i, e)?;
            writeln!(f)?;
        }
        for (l, b) in &p.explanation.predicted_peak_bytes {
            writeln!(f, "  peak {l} {b}  # {}", format_bytes(*b))?;
        }
        writeln!(f, "end")
    }
}

/// One token of a line: bare words and `key=value` pairs; quoted parts are unescaped.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Token {
    text: String,
    /// True when the whole token was one quoted string.
    quoted: bool,
}

fn tokenize(line: &str, no: usize) -> Result<Vec<Token>, ModelError> {
    let err = |m: &str| ModelError::Parse {
        line: no,
        message: m.to_owned(),
    };
    let mut tokens = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.peek() {
            None | Some('#') => break,
            Some(_) => {}
        }
        let mut text = String::new();
        let mut quoted = false;
        let mut bare = false;
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() {
                break;
            }
            chars.next();
            if c == '"' {
                quoted = !bare;
                loop {
                    match chars.next() {
                        None => return Err(err("unterminated quoted string")),
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some('"') => text.push('"'),
                            Some('\\') => text.push('\\'),
                            Some('n') => text.push('\n'),
                            _ => return Err(err("bad escape in quoted string")),
                        },
                        Some(c) => text.push(c),
                    }
                }
            } else {
                quoted = false;
                bare = true;
                text.push(c);
            }
        }
        tokens.push(Token { text, quoted });
    }
    Ok(tokens)
}

/// A cursor over one line's tokens.
struct Line {
    no: usize,
    tokens: Vec<Token>,
    pos: usize,
}

impl Line {
    fn err(&self, message: impl Into<String>) -> ModelError {
        ModelError::Parse {
            line: self.no,
            message: message.into(),
        }
    }
    fn next(&mut self, what: &str) -> Result<Token, ModelError> {
        let t = self
            .tokens
            .get(self.pos)
            .cloned()
            .ok_or_else(|| self.err(format!("expected {what}")))?;
        self.pos += 1;
        Ok(t)
    }
    fn word(&mut self, what: &str) -> Result<String, ModelError> {
        Ok(self.next(what)?.text)
    }
    fn keyword(&mut self, kw: &str) -> Result<(), ModelError> {
        let t = self.next(kw)?;
        if t.text == kw && !t.quoted {
            Ok(())
        } else {
            Err(self.err(format!("expected {kw:?}, found {:?}", t.text)))
        }
    }
    fn quoted(&mut self, what: &str) -> Result<String, ModelError> {
        let t = self.next(what)?;
        if t.quoted {
            Ok(t.text)
        } else {
            Err(self.err(format!("expected a quoted {what}")))
        }
    }
    fn location(&mut self) -> Result<ResidencyLocation, ModelError> {
        let w = self.word("a location")?;
        w.parse().map_err(|e: ModelError| self.err(e.to_string()))
    }
    fn number(&mut self, what: &str) -> Result<u64, ModelError> {
        let w = self.word(what)?;
        w.parse()
            .map_err(|_| self.err(format!("expected {what} as a decimal integer, found {w:?}")))
    }
    fn handle(&mut self) -> Result<ResidencyHandle, ModelError> {
        let w = self.word("a handle")?;
        parse_handle(&w).map_err(|m| self.err(m))
    }
    /// The value of a `key=value` token.
    fn keyed(&mut self, key: &str) -> Result<String, ModelError> {
        let t = self.next(key)?;
        t.text
            .strip_prefix(key)
            .and_then(|r| r.strip_prefix('='))
            .map(str::to_owned)
            .ok_or_else(|| self.err(format!("expected {key}=..., found {:?}", t.text)))
    }
    fn peek_is(&self, prefix: &str) -> bool {
        self.tokens
            .get(self.pos)
            .is_some_and(|t| t.text.starts_with(prefix))
    }
    fn done(&self) -> Result<(), ModelError> {
        match self.tokens.get(self.pos) {
            None => Ok(()),
            Some(t) => Err(self.err(format!("unexpected {:?}", t.text))),
        }
    }
    fn action(&mut self) -> Result<ResidencyAction, ModelError> {
        let kind = self.word("an action")?;
        let action = match kind.as_str() {
            "ensure" => {
                let handle = self.handle()?;
                self.keyword("at")?;
                ResidencyAction::EnsureResident {
                    handle,
                    location: self.location()?,
                }
            }
            "move" => {
                let handle = self.handle()?;
                self.keyword("to")?;
                let to = self.location()?;
                let from = if self.tokens.get(self.pos).is_some_and(|t| t.text == "from") {
                    self.pos += 1;
                    Some(self.location()?)
                } else {
                    None
                };
                ResidencyAction::MoveResident { handle, to, from }
            }
            "drop" => {
                let handle = self.handle()?;
                self.keyword("at")?;
                ResidencyAction::DropResident {
                    handle,
                    location: self.location()?,
                }
            }
            "discard" => ResidencyAction::DiscardValue {
                handle: self.handle()?,
            },
            other => return Err(self.err(format!("unknown action {other:?}"))),
        };
        Ok(action)
    }
    fn reservation(&mut self) -> Result<MemoryReservation, ModelError> {
        let location = self.location()?;
        let nbytes = self.number("reservation bytes")?;
        let label = self.quoted("label")?;
        MemoryReservation::new(location, nbytes, &label).map_err(|e| self.err(e.to_string()))
    }
}

fn parse_handle(w: &str) -> Result<ResidencyHandle, String> {
    let bad = || format!("expected a handle like h1.2a:Type, found {w:?}");
    let rest = w.strip_prefix('h').ok_or_else(bad)?;
    let (ids, ty) = rest.split_once(':').ok_or_else(bad)?;
    let (m, h) = ids.split_once('.').ok_or_else(bad)?;
    let m = u64::from_str_radix(m, 16).map_err(|_| bad())?;
    let h = u64::from_str_radix(h, 16).map_err(|_| bad())?;
    ResidencyHandle::new(m, h, ty).map_err(|e| e.to_string())
}

/// Splits text into non-empty tokenized lines, checking the `KIND "NAME"` header and `end`.
fn lines(text: &str, kind: &str) -> Result<(String, Vec<Line>), ModelError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let tokens = tokenize(raw, i + 1)?;
        if !tokens.is_empty() {
            out.push(Line {
                no: i + 1,
                tokens,
                pos: 0,
            });
        }
    }
    let mut it = out.into_iter();
    let mut head = it.next().ok_or(ModelError::Parse {
        line: 1,
        message: format!("expected `{kind} \"NAME\"`"),
    })?;
    head.keyword(kind)?;
    let name = head.quoted("name")?;
    head.done()?;
    let mut body: Vec<Line> = it.collect();
    let last = body.pop().ok_or(ModelError::Parse {
        line: head.no,
        message: "expected `end`".to_owned(),
    })?;
    let mut last = last;
    last.keyword("end")?;
    last.done()?;
    Ok((name, body))
}

/// Parses a plan listing.
///
/// # Errors
/// [`ModelError::Parse`] naming the line, or a model validation error.
pub fn parse_plan(text: &str) -> Result<ResidencyPlan, ModelError> {
    let (name, body) = lines(text, "plan")?;
    let (mut reclaim, mut enter, mut exit, mut reservations) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for mut line in body {
        let phase = line.word("a phase")?;
        match phase.as_str() {
            "reclaim" => reclaim.push(line.action()?),
            "enter" => enter.push(line.action()?),
            "exit" => exit.push(line.action()?),
            "reserve" => reservations.push(line.reservation()?),
            other => return Err(line.err(format!("unknown plan line {other:?}"))),
        }
        line.done()?;
    }
    Ok(ResidencyPlan::new(&name)?
        .with_reclaim(reclaim)
        .with_enter(enter)
        .with_exit(exit)
        .with_reservations(reservations))
}

impl FromStr for ResidencyPlan {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<Self, ModelError> {
        parse_plan(s)
    }
}

fn parse_reason(line: &Line, text: &str) -> Result<EvictionReason, ModelError> {
    for r in [
        EvictionReason::AnotherMaterialization,
        EvictionReason::SourceReconstructs,
    ] {
        if text == r.to_string() {
            return Ok(r);
        }
    }
    let dest = text
        .strip_prefix("sole materialization moved to requested destination ")
        .and_then(|r| r.strip_suffix(" instead of reconstructing it later"))
        .ok_or_else(|| line.err(format!("unknown eviction reason {text:?}")))?;
    let destination = dest
        .parse()
        .map_err(|e: ModelError| line.err(e.to_string()))?;
    Ok(EvictionReason::SoleMaterializationMoved { destination })
}

fn parse_location_text(line: &Line, text: &str) -> Result<ResidencyLocation, ModelError> {
    text.parse()
        .map_err(|e: ModelError| line.err(e.to_string()))
}

fn parse_number_text(line: &Line, text: &str) -> Result<u64, ModelError> {
    text.parse()
        .map_err(|_| line.err(format!("expected a decimal integer, found {text:?}")))
}

/// Parses a decision listing (the output of `ResidencyDecision`'s `Display`).
///
/// # Errors
/// [`ModelError::Parse`] naming the line, or a validation error of the decision.
pub fn parse_decision(text: &str) -> Result<ResidencyDecision, ModelError> {
    let (name, body) = lines(text, "decision")?;
    let mut manager_id = None;
    let mut version = None;
    let mut explored = None;
    let mut policy_name = None;
    let mut policy_config = Vec::new();
    let mut requirements = Vec::new();
    let mut reservations = Vec::new();
    let mut evictions = Vec::new();
    let mut enter = Vec::new();
    let mut explained = Vec::new();
    let mut peaks = Vec::new();
    for mut line in body {
        let kind = line.word("a decision line")?;
        match kind.as_str() {
            "manager" => manager_id = Some(line.number("a manager id")?),
            "state_version" => version = Some(line.number("a state version")?),
            "explored_states" => explored = Some(line.number("explored states")?),
            "policy" => policy_name = Some(line.quoted("policy name")?),
            "config" => {
                let k = line.quoted("config key")?;
                let v = line.quoted("config value")?;
                policy_config.push((k, v));
            }
            "require" => {
                let handle = line.handle()?;
                line.keyword("at")?;
                requirements.push(ResidencyRequirement::new(handle, line.location()?));
            }
            "reserve" => reservations.push(line.reservation()?),
            "reclaim" => {
                let action = line.action()?;
                let rank = line.keyed("rank")?;
                let rank = u32::try_from(parse_number_text(&line, &rank)?)
                    .map_err(|_| line.err("rank out of range"))?;
                let released = line.keyed("released")?;
                let released_location = parse_location_text(&line, &released)?;
                let bytes = line.keyed("bytes")?;
                let released_nbytes = parse_number_text(&line, &bytes)?;
                let reason = line.keyed("reason")?;
                let reason = parse_reason(&line, &reason)?;
                evictions.push(ResidencyEviction {
                    action,
                    rank,
                    released_location,
                    released_nbytes,
                    reason,
                });
            }
            "enter" => enter.push(line.action()?),
            "explain" => {
                let i = line.number("an action index")?;
                if usize::try_from(i).ok() != Some(explained.len()) {
                    return Err(line.err("explain lines must be numbered 0, 1, ... in order"));
                }
                let verdict = line.word("executable or blocked")?;
                let executable = match verdict.as_str() {
                    "executable" => true,
                    "blocked" => false,
                    _ => return Err(line.err("expected executable or blocked")),
                };
                let no_op = line.tokens.get(line.pos).is_some_and(|t| t.text == "no-op");
                if no_op {
                    line.pos += 1;
                }
                let source = if line.peek_is("source=") {
                    let s = line.keyed("source")?;
                    Some(parse_location_text(&line, &s)?)
                } else {
                    None
                };
                let destination = if line.peek_is("destination=") {
                    let s = line.keyed("destination")?;
                    Some(parse_location_text(&line, &s)?)
                } else {
                    None
                };
                let logical = line.keyed("logical")?;
                let logical_nbytes = parse_number_text(&line, &logical)?;
                let storage = line.keyed("storage")?;
                let storage_nbytes = parse_number_text(&line, &storage)?;
                let reason = if line.peek_is("reason=") {
                    Some(line.keyed("reason")?)
                } else {
                    None
                };
                explained.push((
                    line.no,
                    executable,
                    no_op,
                    source,
                    destination,
                    logical_nbytes,
                    storage_nbytes,
                    reason,
                ));
            }
            "peak" => {
                let l = line.location()?;
                peaks.push((l, line.number("peak bytes")?));
            }
            other => return Err(line.err(format!("unknown decision line {other:?}"))),
        }
        line.done()?;
    }
    let missing = |what: &str| ModelError::Parse {
        line: 1,
        message: format!("decision listing lacks its {what} line"),
    };
    let request = ResidencyRequest::new(&name, requirements, reservations.clone())?;
    let plan = ResidencyPlan::new(&name)?
        .with_reclaim(evictions.iter().map(|e| e.action.clone()))
        .with_enter(enter)
        .with_reservations(reservations.clone());
    let actions: Vec<ResidencyAction> = plan.actions().cloned().collect();
    if explained.len() > actions.len() {
        return Err(ModelError::Parse {
            line: explained.last().map_or(1, |e| e.0),
            message: "more explain lines than plan actions".to_owned(),
        });
    }
    let explanation = ResidencyPlanExplanation {
        plan_name: name.clone(),
        actions: explained
            .into_iter()
            .zip(actions)
            .map(
                |(
                    (_, executable, no_op, source, destination, logical, storage, reason),
                    action,
                )| {
                    ResidencyActionExplanation {
                        action,
                        executable,
                        no_op,
                        source,
                        destination,
                        logical_nbytes: logical,
                        storage_nbytes: storage,
                        reason,
                    }
                },
            )
            .collect(),
        reservations,
        predicted_peak_bytes: peaks,
        feasible: true,
        reason: None,
    };
    ResidencyDecision::new(ResidencyDecisionParts {
        manager_id: manager_id.ok_or_else(|| missing("manager"))?,
        expected_state_version: version.ok_or_else(|| missing("state_version"))?,
        explored_states: explored.ok_or_else(|| missing("explored_states"))?,
        request,
        plan,
        policy_name: policy_name.ok_or_else(|| missing("policy"))?,
        policy_config,
        evictions,
        explanation,
    })
}

impl FromStr for ResidencyDecision {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<Self, ModelError> {
        parse_decision(s)
    }
}

/// The eviction table of a decision, laid out as FHElium's example 14 prints it.
#[must_use]
pub fn eviction_table(decision: &ResidencyDecision) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Decision: policy={}; state_version={}; search_states={}; reclaim={}; enter={}",
        decision.policy_name(),
        decision.expected_state_version(),
        decision.explored_states(),
        decision.plan().reclaim().len(),
        decision.plan().enter().len()
    );
    let _ = writeln!(
        out,
        "{:<4}  {:<12}  {:<8}  {:<8}  {:<8}  reason",
        "rank", "action", "handle", "released", "bytes"
    );
    for e in decision.evictions() {
        let _ = writeln!(
            out,
            "{:<4}  {:<12}  {:<8}  {:<8}  {:<8}  {}",
            e.rank,
            e.action.kind_name(),
            e.action.handle().short_id(),
            e.released_location.to_string(),
            format_bytes(e.released_nbytes),
            e.reason
        );
    }
    let _ = writeln!(out, "Predicted managed peaks:");
    for (l, b) in &decision.explanation().predicted_peak_bytes {
        let _ = writeln!(out, "{:<14} {}", l.to_string(), format_bytes(*b));
    }
    out
}
