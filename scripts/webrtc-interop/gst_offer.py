import sys, gi
gi.require_version('Gst', '1.0'); gi.require_version('GstWebRTC', '1.0'); gi.require_version('GstSdp', '1.0')
from gi.repository import Gst, GstWebRTC, GstSdp, GLib
Gst.init(None)
PIPE = '''webrtcbin name=sendrecv bundle-policy=max-bundle
 videotestsrc is-live=true ! videoconvert ! x264enc tune=zerolatency ! rtph264pay config-interval=-1 ! application/x-rtp,media=video,encoding-name=H264,payload=96 ! sendrecv.
 audiotestsrc is-live=true ! audioconvert ! audioresample ! opusenc ! rtpopuspay ! application/x-rtp,media=audio,encoding-name=OPUS,payload=97 ! sendrecv.
'''
pipe = Gst.parse_launch(PIPE)
webrtc = pipe.get_by_name('sendrecv')
loop = GLib.MainLoop()
state = {}
def on_offer(promise, _):
    promise.wait()
    reply = promise.get_reply(); sys.stderr.write(str(reply.to_string())+'\n'); offer = reply.get_value('offer')
    state['offer'] = offer
    GLib.idle_add(setlocal)
def setlocal():
    webrtc.emit('set-local-description', state['offer'], None)
    GLib.timeout_add(3000, finish)
    return False
def finish():
    # after gathering, print the local description, which now contains candidates inline
    desc = webrtc.get_property('local-description') or state['offer']
    sys.stdout.write(desc.sdp.as_text())
    loop.quit()
    return False
def on_negotiation_needed(element):
    i = 0
    while True:
        t = element.emit('get-transceiver', i)
        if t is None: break
        t.set_property('direction', GstWebRTC.WebRTCRTPTransceiverDirection.SENDONLY)
        i += 1
    promise = Gst.Promise.new_with_change_func(on_offer, None)
    element.emit('create-offer', None, promise)
webrtc.connect('on-negotiation-needed', on_negotiation_needed)
pipe.set_state(Gst.State.PLAYING)
GLib.timeout_add(15000, lambda: loop.quit())
loop.run()
pipe.set_state(Gst.State.NULL)
