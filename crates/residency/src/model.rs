//! Core value-level model types: replica modes, recoverability, handles, value specs,
//! reservations and the four residency actions (spec 1.2-1.8).

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::location::ResidencyLocation;

/// Serializes a shared string as a plain string.
fn serialize_str<S: serde::Serializer>(s: &Arc<str>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(s)
}

/// The owned text, or `err` when it is empty or only whitespace.
fn non_blank(text: &str, err: ModelError) -> Result<String, ModelError> {
    if text.trim().is_empty() {
        Err(err)
    } else {
        Ok(text.to_owned())
    }
}

/// How many steady materializations a logical value may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplicaMode {
    /// Several simultaneous materializations are allowed (`replicable`).
    Replicable,
    /// At most one steady materialization; it changes location with a move (`exclusive`).
    Exclusive,
}

impl fmt::Display for ReplicaMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Replicable => "replicable",
            Self::Exclusive => "exclusive",
        })
    }
}

/// Whether the final materialization of a value may be dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Recoverability {
    /// A registered source can recreate the value, so its last copy may be dropped.
    Reconstructible,
    /// The last copy can never be dropped; only a discard ends the value.
    MustPreserve,
}

impl fmt::Display for Recoverability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Reconstructible => "reconstructible",
            Self::MustPreserve => "must-preserve",
        })
    }
}

/// An opaque, immutable token naming one logical value of one manager.
///
/// It never changes while the value moves. `value_type` is the runtime type tag of the concrete
/// value (used to validate source outputs and typed lookups).
///
/// Cloning is cheap: the type tag is shared (`Arc<str>`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(try_from = "HandleRepr")]
pub struct ResidencyHandle {
    manager_id: u64,
    handle_id: u64,
    value_type: Arc<str>,
}

impl Serialize for ResidencyHandle {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("ResidencyHandle", 3)?;
        s.serialize_field("manager_id", &self.manager_id)?;
        s.serialize_field("handle_id", &self.handle_id)?;
        s.serialize_field("value_type", &*self.value_type)?;
        s.end()
    }
}

impl ResidencyHandle {
    /// A handle; the manager issues these, tests may build foreign ones by hand.
    ///
    /// # Errors
    /// [`ModelError::EmptyValueType`] when `value_type` is empty or blank.
    pub fn new(manager_id: u64, handle_id: u64, value_type: &str) -> Result<Self, ModelError> {
        Ok(Self {
            manager_id,
            handle_id,
            value_type: non_blank(value_type, ModelError::EmptyValueType)?.into(),
        })
    }

    /// The issuing manager's identity.
    #[must_use]
    pub const fn manager_id(&self) -> u64 {
        self.manager_id
    }

    /// The handle's identity within its manager.
    #[must_use]
    pub const fn handle_id(&self) -> u64 {
        self.handle_id
    }

    /// The runtime type tag of the value it names.
    #[must_use]
    pub fn value_type(&self) -> &str {
        &self.value_type
    }

    /// A short display id (8 hex digits), as the example tables print.
    #[must_use]
    pub fn short_id(&self) -> String {
        format!("{:08x}", self.handle_id & 0xffff_ffff)
    }
}

impl fmt::Display for ResidencyHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "h{:016x}.{:016x}", self.manager_id, self.handle_id)
    }
}

/// The fixed facts of a logical value that admission needs (spec 1.4).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "ValueSpecRepr")]
pub struct ResidencyValueSpec {
    #[serde(serialize_with = "serialize_str")]
    value_type: Arc<str>,
    logical_nbytes: u64,
    storage_nbytes: u64,
    replica_mode: ReplicaMode,
    recoverability: Recoverability,
}

impl ResidencyValueSpec {
    /// A spec. `storage_nbytes` is the fixed charge per materialization and must be at least
    /// `logical_nbytes`.
    ///
    /// # Errors
    /// [`ModelError::EmptyValueType`] for a blank type tag, [`ModelError::StorageBelowLogical`]
    /// when `storage_nbytes < logical_nbytes`.
    pub fn new(
        value_type: &str,
        logical_nbytes: u64,
        storage_nbytes: u64,
        replica_mode: ReplicaMode,
        recoverability: Recoverability,
    ) -> Result<Self, ModelError> {
        let value_type: Arc<str> = non_blank(value_type, ModelError::EmptyValueType)?.into();
        if storage_nbytes < logical_nbytes {
            return Err(ModelError::StorageBelowLogical {
                logical_nbytes,
                storage_nbytes,
            });
        }
        Ok(Self {
            value_type,
            logical_nbytes,
            storage_nbytes,
            replica_mode,
            recoverability,
        })
    }

    /// The spec `adopt` builds for a concrete value: charge = max(nbytes, storage_nbytes),
    /// recoverability must-preserve.
    ///
    /// # Errors
    /// [`ModelError::EmptyValueType`] for a blank type tag.
    pub fn adopted(
        value_type: &str,
        nbytes: u64,
        storage_nbytes: u64,
        replica_mode: ReplicaMode,
    ) -> Result<Self, ModelError> {
        Self::new(
            value_type,
            nbytes,
            nbytes.max(storage_nbytes),
            replica_mode,
            Recoverability::MustPreserve,
        )
    }

    /// The runtime type tag.
    #[must_use]
    pub fn value_type(&self) -> &str {
        &self.value_type
    }
    /// Logical payload bytes.
    #[must_use]
    pub const fn logical_nbytes(&self) -> u64 {
        self.logical_nbytes
    }
    /// The fixed charge debited at a location for one materialization.
    #[must_use]
    pub const fn charge(&self) -> u64 {
        self.storage_nbytes
    }
    /// The replica mode.
    #[must_use]
    pub const fn replica_mode(&self) -> ReplicaMode {
        self.replica_mode
    }
    /// The recoverability.
    #[must_use]
    pub const fn recoverability(&self) -> Recoverability {
        self.recoverability
    }
}

/// Named accounting headroom at a location; allocates nothing (spec 1.8).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "ReservationRepr")]
pub struct MemoryReservation {
    location: ResidencyLocation,
    nbytes: u64,
    label: String,
}

impl MemoryReservation {
    /// A reservation of `nbytes` at `location`.
    ///
    /// # Errors
    /// [`ModelError::EmptyLabel`] when `label` is empty or blank.
    pub fn new(location: ResidencyLocation, nbytes: u64, label: &str) -> Result<Self, ModelError> {
        Ok(Self {
            location,
            nbytes,
            label: non_blank(label, ModelError::EmptyLabel)?,
        })
    }
    /// Where the headroom is held.
    #[must_use]
    pub const fn location(&self) -> ResidencyLocation {
        self.location
    }
    /// How many bytes.
    #[must_use]
    pub const fn nbytes(&self) -> u64 {
        self.nbytes
    }
    /// The diagnostic label.
    #[must_use]
    pub fn label(&self) -> &str {
        &self.label
    }
}

/// The unvalidated serde form of [`ResidencyHandle`].
#[derive(Deserialize)]
struct HandleRepr {
    manager_id: u64,
    handle_id: u64,
    value_type: String,
}

impl TryFrom<HandleRepr> for ResidencyHandle {
    type Error = ModelError;
    fn try_from(r: HandleRepr) -> Result<Self, ModelError> {
        Self::new(r.manager_id, r.handle_id, &r.value_type)
    }
}

/// The unvalidated serde form of [`ResidencyValueSpec`].
#[derive(Deserialize)]
struct ValueSpecRepr {
    value_type: String,
    logical_nbytes: u64,
    storage_nbytes: u64,
    replica_mode: ReplicaMode,
    recoverability: Recoverability,
}

impl TryFrom<ValueSpecRepr> for ResidencyValueSpec {
    type Error = ModelError;
    fn try_from(r: ValueSpecRepr) -> Result<Self, ModelError> {
        Self::new(
            &r.value_type,
            r.logical_nbytes,
            r.storage_nbytes,
            r.replica_mode,
            r.recoverability,
        )
    }
}

/// The unvalidated serde form of [`MemoryReservation`].
#[derive(Deserialize)]
struct ReservationRepr {
    location: ResidencyLocation,
    nbytes: u64,
    label: String,
}

impl TryFrom<ReservationRepr> for MemoryReservation {
    type Error = ModelError;
    fn try_from(r: ReservationRepr) -> Result<Self, ModelError> {
        Self::new(r.location, r.nbytes, &r.label)
    }
}

/// A description of a registered reconstruction source (spec 1.6).
///
/// The model never loads anything: the runtime owns the loader. What planning needs is where
/// a load materializes the value (`location`), since a reconstruction holds a temporary charge
/// there while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResidencySource {
    location: ResidencyLocation,
}

impl ResidencySource {
    /// A source whose `load()` produces the value at `location`.
    #[must_use]
    pub const fn new(location: ResidencyLocation) -> Self {
        Self { location }
    }
    /// Where the loaded value appears (the temporary charge is held here).
    #[must_use]
    pub const fn location(&self) -> ResidencyLocation {
        self.location
    }
}

/// One residency transition (spec 1.7). Actions compare by value.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum ResidencyAction {
    /// Postcondition: a materialization exists at `location`; existing replicas are kept.
    EnsureResident {
        /// The value.
        handle: ResidencyHandle,
        /// Where it must be.
        location: ResidencyLocation,
    },
    /// Materialize at `to`, then remove the source materialization (`from`, or one the
    /// manager selects).
    MoveResident {
        /// The value.
        handle: ResidencyHandle,
        /// The destination.
        to: ResidencyLocation,
        /// The source to remove; `None` lets the manager pick.
        from: Option<ResidencyLocation>,
    },
    /// Remove one materialization without ending the value.
    DropResident {
        /// The value.
        handle: ResidencyHandle,
        /// The materialization to remove.
        location: ResidencyLocation,
    },
    /// End the logical value: every materialization and its source.
    DiscardValue {
        /// The value.
        handle: ResidencyHandle,
    },
}

impl ResidencyAction {
    /// The handle the action concerns.
    #[must_use]
    pub const fn handle(&self) -> &ResidencyHandle {
        match self {
            Self::EnsureResident { handle, .. }
            | Self::MoveResident { handle, .. }
            | Self::DropResident { handle, .. }
            | Self::DiscardValue { handle } => handle,
        }
    }

    /// Every location the action names (destination first), for validity checks.
    #[must_use]
    pub fn locations(&self) -> Vec<ResidencyLocation> {
        match self {
            Self::EnsureResident { location, .. } | Self::DropResident { location, .. } => {
                vec![*location]
            }
            Self::MoveResident { to, from, .. } => {
                let mut v = vec![*to];
                v.extend(from.iter().copied());
                v
            }
            Self::DiscardValue { .. } => Vec::new(),
        }
    }

    /// The action's type name as FHElium prints it (`DropResident`, ...).
    #[must_use]
    pub const fn kind_name(&self) -> &'static str {
        match self {
            Self::EnsureResident { .. } => "EnsureResident",
            Self::MoveResident { .. } => "MoveResident",
            Self::DropResident { .. } => "DropResident",
            Self::DiscardValue { .. } => "DiscardValue",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::location::{PAGEABLE_HOST, PINNED_HOST};

    #[test]
    fn adopted_charge_is_max_of_logical_and_storage() {
        let view = ResidencyValueSpec::adopted("Plaintext", 4, 8, ReplicaMode::Exclusive).unwrap();
        assert_eq!(view.charge(), 8);
        assert_eq!(view.logical_nbytes(), 4);
        let alias =
            ResidencyValueSpec::adopted("Ciphertext", 16, 8, ReplicaMode::Replicable).unwrap();
        assert_eq!(alias.charge(), 16);
        assert_eq!(alias.recoverability(), Recoverability::MustPreserve);
    }

    #[test]
    fn spec_rejects_storage_below_logical_and_blank_type() {
        let err = ResidencyValueSpec::new(
            "T",
            9,
            8,
            ReplicaMode::Exclusive,
            Recoverability::Reconstructible,
        )
        .unwrap_err();
        assert_eq!(
            err,
            ModelError::StorageBelowLogical {
                logical_nbytes: 9,
                storage_nbytes: 8
            }
        );
        assert!(err.to_string().contains('9') && err.to_string().contains('8'));
        assert_eq!(
            ResidencyValueSpec::new(
                " ",
                1,
                1,
                ReplicaMode::Exclusive,
                Recoverability::MustPreserve
            )
            .unwrap_err(),
            ModelError::EmptyValueType
        );
        assert_eq!(
            ResidencyHandle::new(1, 2, "").unwrap_err(),
            ModelError::EmptyValueType
        );
    }

    #[test]
    fn reservation_requires_a_label() {
        let err = MemoryReservation::new(PINNED_HOST, 10, "  ").unwrap_err();
        assert_eq!(err, ModelError::EmptyLabel);
        assert!(err.to_string().contains("non-empty"));
        let r = MemoryReservation::new(PINNED_HOST, 0, "ws").unwrap();
        assert_eq!(
            (r.location(), r.nbytes(), r.label()),
            (PINNED_HOST, 0, "ws")
        );
    }

    #[test]
    fn actions_compare_by_value_and_round_trip_through_serde() {
        let h = ResidencyHandle::new(7, 0xb7bd_a0d2, "Plaintext").unwrap();
        let a = ResidencyAction::DropResident {
            handle: h.clone(),
            location: PAGEABLE_HOST,
        };
        let b = ResidencyAction::DropResident {
            handle: ResidencyHandle::new(7, 0xb7bd_a0d2, "Plaintext").unwrap(),
            location: PAGEABLE_HOST,
        };
        assert_eq!(a, b);
        assert_eq!(a.kind_name(), "DropResident");
        assert_eq!(a.handle().short_id(), "b7bda0d2");
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<ResidencyAction>(&json).unwrap(), a);
        let m = ResidencyAction::MoveResident {
            handle: h,
            to: PINNED_HOST,
            from: None,
        };
        assert_ne!(m, a);
        assert_eq!(m.kind_name(), "MoveResident");
    }
}
