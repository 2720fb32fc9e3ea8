# Type stubs for the tirc package (see __init__.py for what each does).
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

__version__: str

class TircError(Exception): ...

PathLike = Union[str, "os.PathLike[str]"]

def gpu_available() -> bool: ...
def load(path: Optional[PathLike] = ..., *, source: Optional[str] = ..., defines: Optional[Mapping[str, int]] = ...) -> Module: ...
def tune(
    path: PathLike,
    schedule: str,
    *,
    defines: Optional[Mapping[str, int]] = ...,
    params: Optional[Mapping[str, Any]] = ...,
    space: Optional[Mapping[str, Sequence[Any]]] = ...,
    target: str = ...,
    budget: Optional[int] = ...,
    strategy: Optional[str] = ...,
    db: Optional[PathLike] = ...,
    repeat: Optional[int] = ...,
    warmup: Optional[int] = ...,
    seed: Optional[int] = ...,
    cluster: Optional[str] = ...,
    ray_address: Optional[str] = ...,
) -> Dict[str, Any]: ...

class Module:
    source: str
    path: Optional[str]
    defines: Dict[str, int]
    functions: List[str]
    schedules: Dict[str, Tuple[str, Dict[str, str]]]
    constants: Dict[str, int]
    def build(self, schedule: Optional[str] = ..., *, func: Optional[str] = ..., params: Optional[Mapping[str, Any]] = ...) -> Kernel: ...

class Kernel:
    module: Module
    schedule: Optional[str]
    func: Optional[str]
    params: Dict[str, str]
    arguments: List[Dict[str, Any]]
    sizes: List[str]
    scalars: List[str]
    @property
    def name(self) -> str: ...
    @property
    def cuda_source(self) -> str: ...
    @property
    def lowered(self) -> str: ...
    @property
    def scheduled(self) -> str: ...
    @property
    def trace(self) -> List[str]: ...
    @property
    def replay(self) -> str: ...
    @property
    def launch(self) -> List[Dict[str, Any]]: ...
    def __call__(self, *arrays: Any, stream: Optional[int] = ..., **scalars: float) -> None: ...
    def check(self, *, target: str = ..., seed: Optional[int] = ..., tolerance: Optional[float] = ...) -> Dict[str, Any]: ...
    def bench(self, *, repeat: int = ..., warmup: int = ..., compare: Optional[str] = ..., seed: Optional[int] = ...) -> Dict[str, Any]: ...
    def build(self, out_dir: PathLike, *, name: Optional[str] = ..., arch: str = ...) -> List[str]: ...
