import sys, socket, gi
gi.require_version('Gst', '1.0'); gi.require_version('GstWebRTC', '1.0'); gi.require_version('GstSdp', '1.0')
from gi.repository import Gst, GstWebRTC, GstSdp, GLib
Gst.init(None)
PIPE = '''webrtcbin name=sendrecv bundle-policy=max-bundle
 videotestsrc is-live=true ! videoconvert ! x264enc tune=zerolatency ! rtph264pay config-interval=-1 ! application/x-rtp,media=video,encoding-name=H264,payload=96 ! sendrecv.
 audiotestsrc is-live=true ! audioconvert ! audioresample ! opusenc ! rtpopuspay ! application/x-rtp,media=audio,encoding-name=OPUS,payload=97 ! sendrecv.
'''
import os, time
for f in ('live_offer.sdp','live_answer.sdp'):
    if os.path.exists(f): os.remove(f)
pipe = Gst.parse_launch(PIPE)
webrtc = pipe.get_by_name('sendrecv')
loop = GLib.MainLoop()
state = {}
def on_offer(promise, _):
    promise.wait()
    reply = promise.get_reply(); print('reply', reply.to_string()[:300]); state['offer'] = reply.get_value('offer')
    if state['offer'] is None: return
    GLib.idle_add(set_descriptions)
def set_descriptions():
    webrtc.emit('set-local-description', state['offer'], None)
    ufrag = [l for l in state['offer'].sdp.as_text().splitlines() if l.startswith('a=ice-ufrag:')][0]
    print('offer', ufrag)
    open('live_offer.sdp.tmp','w').write(state['offer'].sdp.as_text()); os.rename('live_offer.sdp.tmp','live_offer.sdp')
    for _ in range(300):
        if os.path.exists('live_answer.sdp'): break
        time.sleep(0.1)
    res, sdpmsg = GstSdp.SDPMessage.new_from_text(open('live_answer.sdp').read())
    answer = GstWebRTC.WebRTCSessionDescription.new(GstWebRTC.WebRTCSDPType.ANSWER, sdpmsg)
    p = Gst.Promise.new_with_change_func(on_remote_set, None)
    webrtc.emit('set-remote-description', answer, p)
    return False
def on_remote_set(promise, _):
    promise.wait()
    reply = promise.get_reply()
    print('set-remote-description reply:', reply.to_string() if reply else None)
    GLib.timeout_add(42000, lambda: loop.quit())
def poll():
    try:
        data, addr = sock.recvfrom(2048)
        print('REQUEST', data.hex(), addr)
        loop.quit(); return False
    except socket.timeout:
        return True
def on_negotiation_needed(element):
    i = 0
    while True:
        t = element.emit('get-transceiver', i)
        if t is None: break
        t.set_property('direction', GstWebRTC.WebRTCRTPTransceiverDirection.SENDONLY); i += 1
    element.emit('create-offer', None, Gst.Promise.new_with_change_func(on_offer, None))
def on_state(el, pspec):
    print('ice-connection-state', el.get_property('ice-connection-state'))
webrtc.connect('on-negotiation-needed', on_negotiation_needed)
webrtc.connect('notify::ice-connection-state', on_state)
bus = pipe.get_bus(); bus.add_signal_watch()
bus.connect('message::error', lambda b, m: (print('ERROR', m.parse_error()), loop.quit()))
pipe.set_state(Gst.State.PLAYING)
GLib.timeout_add(50000, lambda: loop.quit())
loop.run()
pipe.set_state(Gst.State.NULL)
