"""An S3 client's verifying SSL context: the CA bundle parsed once per process and file
version (``storage._s3``), as aiobotocore would build it, and built by aiobotocore itself
whenever more is asked of it."""

from __future__ import annotations

import os
import shutil
import ssl

import pytest

pytest.importorskip("s3fs")

from storage import _s3


@pytest.fixture
def bundle(tmp_path, monkeypatch):
    """A CA bundle of its own (certifi's, copied), the only context made so far."""
    import certifi

    path = tmp_path / "ca.pem"
    shutil.copyfile(certifi.where(), path)
    monkeypatch.setattr(_s3, "_contexts", {})
    return path


def _session(**kwargs):
    return _s3._http_session_class()(**kwargs)


def test_clients_share_the_context_of_one_bundle_until_the_file_changes(bundle):
    first, proxy = _session(verify=str(bundle))._build_ssl_contexts(None)
    assert proxy is None
    assert _session(verify=str(bundle))._build_ssl_contexts(None)[0] is first
    # as aiobotocore makes it: the server's certificate and name are checked against the
    # same authorities
    from aiobotocore.httpsession import AIOHTTPSession

    own = AIOHTTPSession(verify=str(bundle))._build_ssl_contexts(None)[0]
    assert first.verify_mode == own.verify_mode == ssl.CERT_REQUIRED
    assert first.check_hostname and own.check_hostname
    assert first.get_ca_certs() == own.get_ca_certs() and first.get_ca_certs()

    bundle.write_bytes(bundle.read_bytes() + b"\n")  # another version of the file
    changed = _session(verify=str(bundle))._build_ssl_contexts(None)[0]
    assert changed is not first
    assert len(_s3._contexts) == 2


@pytest.mark.parametrize("asked", ["client certificate", "proxy", "no verification",
                                   "a bundle that is no file"])
def test_a_context_asked_for_more_is_built_by_aiobotocore(bundle, asked, tmp_path):
    shared = _session(verify=str(bundle))._build_ssl_contexts(None)[0]
    if asked == "client certificate":
        # aiobotocore loads it into the context it builds (here it fails: it is no key pair)
        with pytest.raises(ssl.SSLError):
            _session(verify=str(bundle), client_cert=str(bundle))._build_ssl_contexts(None)
        return
    if asked == "proxy":
        contexts = _session(verify=str(bundle))._build_ssl_contexts("http://127.0.0.1:1")
    elif asked == "no verification":
        contexts = _session(verify=False)._build_ssl_contexts(None)
        assert contexts[0].verify_mode == ssl.CERT_NONE
    else:  # aiobotocore's own error, as without the shared contexts
        with pytest.raises(IsADirectoryError):
            _session(verify=str(tmp_path))._build_ssl_contexts(None)
        assert len(_s3._contexts) == 1
        return
    assert contexts[0] is not shared
    assert len(_s3._contexts) == 1


def test_warm_s3_parses_the_bundle_this_environment_names(bundle, monkeypatch):
    monkeypatch.setenv("AWS_CA_BUNDLE", str(bundle))
    monkeypatch.setattr(_s3, "_session", None)
    _s3.warm_s3()
    assert [key[0] for key in _s3._contexts] == [os.path.abspath(bundle)]
    # a client of a forked command, with the same environment, finds it made
    warmed = next(iter(_s3._contexts.values()))
    assert _session(verify=str(bundle))._build_ssl_contexts(None)[0] is warmed


def test_s3_stores_get_the_session_class_unless_they_name_one():
    options = _s3.s3_options({"config_kwargs": {"read_timeout": 5}})
    assert options["config_kwargs"] == {"read_timeout": 5,
                                        "http_session_cls": _s3._http_session_class()}
    own = object()
    assert _s3.s3_options({"config_kwargs": {"http_session_cls": own}}) \
        ["config_kwargs"]["http_session_cls"] is own
    assert _s3.s3_options({"profile": "p"})["config_kwargs"]["http_session_cls"] \
        is _s3._http_session_class()


def test_a_bundle_that_cannot_be_read_is_left_to_the_command_using_s3(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_CA_BUNDLE", str(tmp_path / "gone.pem"))
    monkeypatch.setattr(_s3, "_session", None)
    monkeypatch.setattr(_s3, "_contexts", {})
    _s3.warm_s3()  # the warm process goes on serving every command
    assert _s3._contexts == {}
    with pytest.raises(FileNotFoundError):  # aiobotocore's own error, where S3 is used
        _session(verify=str(tmp_path / "gone.pem"))._build_ssl_contexts(None)
