"""The proxy of docker-compose.yml: nginx in front of gunicorn, its site configuration
filled from deploy/nginx/default.conf.template, and what it must agree on with the
service (its port, its body limit, its timeouts, the forwarded headers). The same template
runs in front of a real gunicorn in tests/test_production_proxy.py."""

from __future__ import annotations

import os
import re
import subprocess

import pytest
import yaml
from django.conf import settings

from tests import production_stack
from tests.test_compose import COMPOSE, ROOT, argv, interpolate


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_only_the_proxy_publishes_a_port_and_gunicorn_listens_inside(compose):
    services = compose["services"]
    published = {name for name, service in services.items() if "ports" in service}
    assert published == {"proxy"}
    assert argv(services["proxy"]["ports"])[0].endswith(":80")
    bind = next(a for a in argv(services["web"]["command"]) if a.startswith("--bind="))
    assert services["web"]["expose"] == [bind.rsplit(":", 1)[1]]
    proxy_env = services["proxy"]["environment"]
    assert proxy_env["STUDY_PROXY_UPSTREAM"] == f"web:{services['web']['expose'][0]}"
    assert proxy_env["STUDY_PROXY_LISTEN"] == "80"


def test_the_proxy_fills_the_template_in_the_repository_from_its_environment(compose):
    proxy = compose["services"]["proxy"]
    assert proxy["image"].startswith("nginx:")
    mounts = {
        (ROOT / source).resolve(): (target, mode)
        for source, target, mode in (volume.split(":") for volume in proxy["volumes"])
    }
    # The image's entrypoint fills /etc/nginx/templates/*.template into conf.d, included
    # by the main file, which replaces the image's own.
    assert mounts == {
        production_stack.SITE_TEMPLATE: ("/etc/nginx/templates/default.conf.template", "ro"),
        production_stack.MAIN_CONFIG: ("/etc/nginx/nginx.conf", "ro"),
    }
    env = proxy["environment"]
    names = production_stack.template_names()
    assert names and names <= set(env)
    assert all(re.match(env["NGINX_ENVSUBST_FILTER"], name) for name in names)
    # nginx's own variables are lower case and pass through untouched.
    assert not any(re.match(env["NGINX_ENVSUBST_FILTER"], n) for n in ("host", "scheme"))


def test_the_proxy_refuses_bodies_at_the_services_own_limit(compose):
    proxy_limit = compose["services"]["proxy"]["environment"]["STUDY_MAX_BODY_BYTES"]
    assert proxy_limit == compose["x-app"]["environment"]["STUDY_MAX_BODY_BYTES"]
    if "STUDY_MAX_BODY_BYTES" not in os.environ:
        assert int(interpolate(proxy_limit)) == settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    site = production_stack.render_site({**_proxy_values(compose), "STUDY_MAX_BODY_BYTES": "12345"})
    assert re.search(r"^\s*client_max_body_size 12345;$", site, re.MULTILINE)


def _proxy_values(compose) -> dict[str, str]:
    env = compose["services"]["proxy"]["environment"]
    return {name: interpolate(str(env[name])) for name in production_stack.template_names()}


def test_the_proxy_buffers_whole_requests_with_short_client_timeouts(compose):
    site = production_stack.render_site(_proxy_values(compose))
    directives = dict(
        re.findall(r"^\s*(\w+) ([^;{]+);$", site, re.MULTILINE)
    )  # the last of a name wins, as in nginx
    assert directives["proxy_request_buffering"] == "on"
    assert directives["proxy_buffering"] == "on"
    for name in ("client_header_timeout", "client_body_timeout"):
        assert 1 <= int(directives[name].rstrip("s")) <= 30, name
    assert int(directives["send_timeout"].rstrip("s")) <= 60
    # nginx waits for gunicorn longer than gunicorn lets a request run.
    gunicorn = argv(compose["services"]["web"]["command"])
    worker_timeout = int(next(a for a in gunicorn if a.startswith("--timeout=")).split("=")[1])
    assert int(directives["proxy_read_timeout"].rstrip("s")) > worker_timeout
    # The headers Django reads behind it: the Host with its port, the client's address
    # appended, the scheme never taken from the client unless a TLS proxy is trusted.
    assert "proxy_set_header Host $http_host;" in site
    assert "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;" in site
    assert "proxy_set_header X-Forwarded-Proto $study_forwarded_proto;" in site
    assert '"on:https" https;' in site and "default    $scheme;" in site
    assert compose["x-app"]["environment"]["STUDY_TRUSTED_PROXIES"].endswith(":-1}")


def test_the_filled_template_passes_nginx_t(compose, tmp_path):
    nginx = production_stack.nginx_binary()
    if nginx is None:
        if os.environ.get("REQUIRE_SERVICES") == "1":
            pytest.fail("REQUIRE_SERVICES=1 but nginx is not installed")
        pytest.skip("nginx is not installed")
    # The compose values, with an upstream this machine resolves and a port it may open.
    values = {**_proxy_values(compose), "STUDY_PROXY_UPSTREAM": "127.0.0.1:8000"}
    values["STUDY_PROXY_LISTEN"] = f"127.0.0.1:{production_stack.free_port()}"
    config = tmp_path / "nginx.conf"
    config.write_text(production_stack.main_config(production_stack.render_site(values), tmp_path))
    done = subprocess.run(
        [nginx, "-t", "-p", str(tmp_path), "-e", str(tmp_path / "error.log"), "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    # A template with a name nothing fills is refused before nginx sees it.
    with pytest.raises(KeyError, match="STUDY_PROXY_UPSTREAM"):
        production_stack.render_site({k: v for k, v in values.items() if "UPSTREAM" not in k})
