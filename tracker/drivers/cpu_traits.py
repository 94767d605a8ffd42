"""CPU feature flags (from /proc/cpuinfo or libvirt) as os-traits HW_CPU_*.

Most flags map by name (avx2 -> HW_CPU_X86_AVX2, sse4_1 / sse4.1 ->
HW_CPU_X86_SSE41); the table below holds the ones whose kernel or libvirt
name differs from the trait's. Flags with no trait are ignored. The
memory-encryption flags (sev, sev_es, sev_snp) give no trait here: nova 34
puts HW_CPU_X86_AMD_SEV* on the memory-encryption children only, where the
kernel, QEMU and libvirt allow such guests too (``layout``).
"""
from collections.abc import Iterable
import re

import os_traits

_X86_ALIASES = {
    'PNI': 'SSE3',
    'PCLMULQDQ': 'CLMUL',
    'PCLMULDQ': 'CLMUL',
    'AES': 'AESNI',
    'FMA': 'FMA3',
    'BMI1': 'BMI',
    'SHANI': 'SHA',
    'RTM': 'TSX',
    'HLE': 'TSX',
    'PCID': 'INTEL_PCID',
    'MDCLEAR': 'INTEL_MD_CLEAR',
    'SPECCTRL': 'INTEL_SPEC_CTRL',
    'SSBD': 'INTEL_SSBD',
    'IBPB': 'AMD_IBPB',
    'VIRTSSBD': 'AMD_VIRT_SSBD',
    'VAES': 'AVX512VAES',
    'GFNI': 'AVX512GFNI',
    'VPCLMULQDQ': 'AVX512VPCLMULQDQ',
}

# flags that also give a second, vendor-named trait (as nova maps them)
_X86_ALSO = {'VMX': 'INTEL_VMX', 'SVM': 'AMD_SVM'}

_KNOWN = frozenset(os_traits.get_traits('HW_CPU_'))

# The libvirt CPU feature names nova 34's libvirt driver reads as traits:
# it reports no other (libvirt's pni, pcid, md-clear, pdpe1gb... give
# none there), so the libvirt driver keeps only these. Each maps to the
# same trait by the rules above.
NOVA_LIBVIRT_FEATURES = frozenset({
    '3dnow', 'abm', 'aes', 'amx-bf16', 'amx-int8', 'amx-tile', 'avx', 'avx2',
    'avx512bw', 'avx512cd', 'avx512dq', 'avx512er', 'avx512f', 'avx512pf',
    'avx512vl', 'avx512vnni', 'avx512vbmi', 'avx512ifma', 'avx512vbmi2',
    'avx512bitalg', 'vaes', 'gfni', 'vpclmulqdq', 'avx512-vpopcntdq', 'bmi1',
    'bmi2', 'pclmuldq', 'f16c', 'fma', 'fma4', 'mmx', 'mpx', 'sha-ni', 'sse',
    'sse2', 'sse3', 'sse4.1', 'sse4.2', 'sse4a', 'ssse3', 'svm', 'tbm', 'vmx',
    'xop'})


def _squash(flag: str) -> str:
    return re.sub(r'[^A-Z0-9]', '', flag.upper())


def traits_for_flags(flags: Iterable[str], arch: str = 'x86_64') -> set[str]:
    """The set of HW_CPU_* traits for an iterable of CPU flag names."""
    prefix = 'HW_CPU_AARCH64_' if arch.startswith(('aarch64', 'arm')) \
        else 'HW_CPU_X86_'
    traits: set[str] = set()
    for flag in flags:
        name = _squash(flag)
        names = {name}
        if prefix == 'HW_CPU_X86_':
            names = {_X86_ALIASES.get(name, name)}
            if name in _X86_ALSO:
                names.add(_X86_ALSO[name])
        traits |= {prefix + n for n in names if prefix + n in _KNOWN}
    return traits
