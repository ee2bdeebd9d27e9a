//! Type erasure of managed values and typed handles.
//!
//! One manager holds values of several Rust types at once (ciphertexts, plaintexts and rotation
//! keys in the seed example). Every [`Resident`] type is stored behind the object-safe
//! [`ErasedValue`]; a [`Handle<T>`] remembers the Rust type so that lease lookups return `&T`.

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::Arc;

use fhelium_cuda::{Event, Memory, MemoryError, Resident, StorageKey, Stream};
use fhelium_residency::{ResidencyHandle, ResidencyLocation};

use crate::error::SourceError;

/// An object-safe view of a [`Resident`] value; implemented for every `Resident` type.
pub(crate) trait ErasedValue: Send + Sync + 'static {
    fn type_tag(&self) -> &'static str;
    fn placement(&self) -> Result<ResidencyLocation, MemoryError>;
    fn nbytes(&self) -> u64;
    fn storage_nbytes(&self) -> u64;
    fn storage_keys(&self) -> Vec<StorageKey>;
    fn materialize_erased(
        &self,
        mem: &Memory,
        to: &ResidencyLocation,
        stream: Option<&Stream>,
    ) -> Result<(Arc<dyn ErasedValue>, Option<Event>), MemoryError>;
    fn as_any(&self) -> &dyn Any;
}

impl<T: Resident> ErasedValue for T {
    fn type_tag(&self) -> &'static str {
        Resident::type_tag(self)
    }
    fn placement(&self) -> Result<ResidencyLocation, MemoryError> {
        Resident::placement(self)
    }
    fn nbytes(&self) -> u64 {
        Resident::nbytes(self)
    }
    fn storage_nbytes(&self) -> u64 {
        Resident::storage_nbytes(self)
    }
    fn storage_keys(&self) -> Vec<StorageKey> {
        Resident::storage_keys(self)
    }
    fn materialize_erased(
        &self,
        mem: &Memory,
        to: &ResidencyLocation,
        stream: Option<&Stream>,
    ) -> Result<(Arc<dyn ErasedValue>, Option<Event>), MemoryError> {
        let m = Resident::materialize(self, mem, to, stream)?;
        Ok((Arc::new(m.value), m.ready))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A shared, type-erased managed value.
pub(crate) type ValueArc = Arc<dyn ErasedValue>;

/// A registered source's loader, type-erased.
pub(crate) type Loader = Arc<dyn Fn() -> Result<ValueArc, SourceError> + Send + Sync>;

/// Downcasts a stored value to `T`.
pub(crate) fn downcast<'a, T: Resident>(
    value: &'a dyn ErasedValue,
    handle: &ResidencyHandle,
) -> crate::Result<&'a T> {
    value
        .as_any()
        .downcast_ref::<T>()
        .ok_or_else(|| crate::RuntimeError::TypeMismatch {
            handle: handle.clone(),
            expected: std::any::type_name::<T>(),
            actual: value.type_tag(),
        })
}

/// A [`ResidencyHandle`] that remembers the Rust type of the value it names.
///
/// It dereferences to the plain handle, so every manager method that takes
/// `&ResidencyHandle` accepts `&handle` too; lease lookups with a `Handle<T>` return `&T`.
pub struct Handle<T> {
    raw: ResidencyHandle,
    _type: PhantomData<fn() -> T>,
}

impl<T> Handle<T> {
    pub(crate) fn new(raw: ResidencyHandle) -> Self {
        Self {
            raw,
            _type: PhantomData,
        }
    }

    /// The untyped handle.
    #[must_use]
    pub fn raw(&self) -> &ResidencyHandle {
        &self.raw
    }

    /// Gives up the type.
    #[must_use]
    pub fn into_raw(self) -> ResidencyHandle {
        self.raw
    }
}

impl<T> Deref for Handle<T> {
    type Target = ResidencyHandle;
    fn deref(&self) -> &ResidencyHandle {
        &self.raw
    }
}

impl<T> AsRef<ResidencyHandle> for Handle<T> {
    fn as_ref(&self) -> &ResidencyHandle {
        &self.raw
    }
}

impl<T> Clone for Handle<T> {
    fn clone(&self) -> Self {
        Self::new(self.raw.clone())
    }
}

impl<T> PartialEq for Handle<T> {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

impl<T> Eq for Handle<T> {}

impl<T> std::hash::Hash for Handle<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.raw.hash(state);
    }
}

impl<T> fmt::Debug for Handle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Handle<{}>({})", std::any::type_name::<T>(), self.raw)
    }
}

impl<T> fmt::Display for Handle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.raw, f)
    }
}
