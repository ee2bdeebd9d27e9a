//! The CPU engine's remaining value operations on the device: domain transitions of RNS
//! plaintexts (spec §3.10), level drops to any level, and integer multiples.
//!
//! * `plaintext_*_domain`: the ciphertext transforms on one component (the `*_gs` NTT
//!   kernels, one launch), every row of the plaintext's basis (Q, or QP after
//!   `prepare_plaintext_for_multiplication` with basis QP).
//! * `mod_switch_to_level`: one `drop_rows` launch however many rows go.
//! * `multiply_by_integer`: one `ew_mul_int` launch; `k` travels as a kernel argument (no
//!   per-call constant table), reduced and brought to Montgomery form on the device.
//!
//! Every result equals the CPU engine's word for word.

use cust::stream::Stream;
use fhelium_residency::ResidencyLocation;

use super::{
    dev_ptr, drv, Arg, CkksError, CudaEngine, FwdNtt, GpuCiphertext, GpuPlaintext, Result, Words,
    EW_THREADS, K, KERNEL_N,
};
use crate::values::{Domain, Plaintext};

impl CudaEngine {
    /// Forward NTT of every row of a device plaintext (coefficient → NTT); level, scale,
    /// basis and rows are kept, as the CPU engine's
    /// [`plaintext_coefficient_domain_to_ntt_domain`](crate::CpuEngine::plaintext_coefficient_domain_to_ntt_domain).
    #[tracing::instrument(
        name = "ckks.plaintext_coefficient_domain_to_ntt_domain",
        level = "debug",
        skip_all,
        fields(
            location = %self.location(),
            level = pt.level(),
            bytes = pt.nbytes(),
            stream = ?stream.as_inner(),
        ),
        err(level = "debug")
    )]
    pub fn plaintext_coefficient_domain_to_ntt_domain(
        &self,
        pt: &GpuPlaintext,
        stream: &Stream,
    ) -> Result<GpuPlaintext> {
        self.change_plaintext_domain(
            "plaintext_coefficient_domain_to_ntt_domain",
            pt,
            Domain::Coefficient,
            Domain::Ntt,
            stream,
        )
    }

    /// Inverse NTT of every row of a device plaintext (NTT → coefficient).
    #[tracing::instrument(
        name = "ckks.plaintext_ntt_domain_to_coefficient_domain",
        level = "debug",
        skip_all,
        fields(
            location = %self.location(),
            level = pt.level(),
            bytes = pt.nbytes(),
            stream = ?stream.as_inner(),
        ),
        err(level = "debug")
    )]
    pub fn plaintext_ntt_domain_to_coefficient_domain(
        &self,
        pt: &GpuPlaintext,
        stream: &Stream,
    ) -> Result<GpuPlaintext> {
        self.change_plaintext_domain(
            "plaintext_ntt_domain_to_coefficient_domain",
            pt,
            Domain::Ntt,
            Domain::Coefficient,
            stream,
        )
    }

    fn change_plaintext_domain(
        &self,
        op: &'static str,
        pt: &GpuPlaintext,
        from: Domain,
        to: Domain,
        stream: &Stream,
    ) -> Result<GpuPlaintext> {
        self.check_context(op, pt.context)?;
        Self::need_domain(op, pt.domain, from)?;
        let rows = pt.prime_ids.len();
        let prime_off = pt.prime_ids[0];
        let out = self.alloc(op, pt.buf.len(), stream)?;
        if to == Domain::Ntt {
            let f = FwdNtt::dense(pt.ptr(), dev_ptr(&out), prime_off, rows);
            self.ntt_fwd(op, &f, rows, 1, stream)?;
        } else {
            self.ntt_inverse_raw(
                op,
                pt.ptr(),
                dev_ptr(&out),
                dev_ptr(&self.n_inv),
                prime_off,
                rows,
                1,
                stream,
            )?;
        }
        Ok(GpuPlaintext {
            buf: self.owned(out),
            device: pt.device,
            context: pt.context,
            level: pt.level,
            scale: pt.scale,
            domain: to,
            basis: pt.basis,
            prime_ids: pt.prime_ids.clone(),
        })
    }

    /// A host copy of a device plaintext (an RNS [`Plaintext`] in pageable memory);
    /// synchronises `stream`.
    #[tracing::instrument(
        name = "ckks.download_plaintext",
        level = "debug",
        skip_all,
        fields(
            location = %self.location(),
            level = pt.level(),
            bytes = pt.nbytes(),
            stream = ?stream.as_inner(),
        ),
        err(level = "debug")
    )]
    pub fn download_plaintext(&self, pt: &GpuPlaintext, stream: &Stream) -> Result<Plaintext> {
        const OP: &str = "download_plaintext";
        drv(OP, stream.synchronize())?;
        let mut host = vec![0u64; pt.buf.len()];
        drv(OP, pt.buf.copy_to(&mut host[..]))?;
        Ok(pt.with_words(Words::from_vec(host, ResidencyLocation::PageableHost)))
    }

    /// Drops leading rows down to `level` (at least the current level, at most the last
    /// public level; the current level gives a copy), in one launch; as the CPU engine's
    /// [`mod_switch_to_level`](crate::CpuEngine::mod_switch_to_level). Any domain.
    #[tracing::instrument(
        name = "ckks.mod_switch_to_level",
        level = "debug",
        skip_all,
        fields(
            location = %self.location(),
            level = ct.level(),
            bytes = ct.nbytes(),
            to_level = level,
            stream = ?stream.as_inner(),
        ),
        err(level = "debug")
    )]
    pub fn mod_switch_to_level(
        &self,
        ct: &GpuCiphertext,
        level: usize,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        const OP: &str = "mod_switch_to_level";
        self.check_context(OP, ct.context)?;
        if level < ct.level || level > self.max_level {
            return Err(CkksError::InvalidLevel {
                op: OP,
                level,
                current: ct.level,
                max_level: self.max_level,
            }
            .into());
        }
        self.drop_rows(OP, ct, level - ct.level, stream)
    }

    /// `ct` without its first `drop` rows (of every component), one `drop_rows` launch.
    pub(super) fn drop_rows(
        &self,
        op: &'static str,
        ct: &GpuCiphertext,
        drop: usize,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        let limbs = ct.num_limbs();
        let out = self.alloc(op, ct.components * (limbs - drop) * KERNEL_N, stream)?;
        self.launch(
            op,
            K::DropRows,
            Self::ew_grid(limbs - drop, ct.components),
            EW_THREADS,
            stream,
            &[
                Arg::U64(ct.ptr()),
                Arg::U64(dev_ptr(&out)),
                Arg::U32(limbs as u32),
                Arg::U32(drop as u32),
            ],
        )?;
        let mut r = self.like(ct, out);
        r.level += drop;
        r.prime_ids.drain(..drop);
        Ok(r)
    }

    /// Multiplies every coefficient by the integer `k` (no scale change; any domain), as
    /// the CPU engine's [`multiply_by_integer`](crate::CpuEngine::multiply_by_integer).
    #[tracing::instrument(
        name = "ckks.multiply_by_integer",
        level = "debug",
        skip_all,
        fields(
            location = %self.location(),
            level = ct.level(),
            bytes = ct.nbytes(),
            k = k,
            stream = ?stream.as_inner(),
        ),
        err(level = "debug")
    )]
    pub fn multiply_by_integer(
        &self,
        ct: &GpuCiphertext,
        k: i64,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        self.unary(
            "multiply_by_integer",
            K::EwMulInt,
            ct,
            &[Arg::U64(k.unsigned_abs()), Arg::U32(u32::from(k < 0))],
            stream,
        )
    }
}
