//! What a product links: the runtime ([`runtime`], [`crate::Tuned`]) with its cuBLAS-like call
//! descriptors ([`desc`]), the lookup that picks a
//! config for a shape ([`lookup`]) with its predictor for untuned shapes ([`select`]), the
//! exports (CUDA header, cubin) ([`export`]), and two opt-ins: recording the shapes a product
//! calls ([`record`]) and tuning an unseen shape on its first call ([`online`]).

pub mod desc;
pub mod export;
pub mod lookup;
pub mod online;
pub mod record;
pub mod runtime;
pub mod select;
