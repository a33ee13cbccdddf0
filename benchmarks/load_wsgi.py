"""What ``benchmarks/bench_load`` serves: the service, with the bare floor (``benchmarks.floor``)
under ``/bench/floor/`` in the same gunicorn workers."""

from studyapp.wsgi import application as service

from . import floor

FLOOR_PREFIX = "/bench/floor/"


def application(environ, start_response):
    if environ.get("PATH_INFO", "").startswith(FLOOR_PREFIX):
        return floor.application(environ, start_response)
    return service(environ, start_response)
